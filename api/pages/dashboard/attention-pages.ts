import type { Express, Response } from 'express';
import { listTransfers, getTransfer } from '../../../core/transfers/transfers';
import { listOrders } from '../../../core/orders/orders';
import { presentOrder, type OrderException } from '../../../core/views/order';
import { presentTransfer, type TransferView } from '../../../core/views/transfer';
import { attributeTransfer, awaitsAttribution, type AttributionTarget } from '../../../core/reconciliation/attribute-transfer';
import { resolveOrder } from '../../../core/reconciliation/resolve-order';
import { AppError } from '../../../core/platform/errors';
import { roleAtLeast } from '../../../core/organizations/roles';
import { html, type Html } from '../html';
import { chromeText, langOf } from './chrome-text';
import { formatDate, notice, offsetPager, pager } from './layout';
import { orderBadges, sendOrderPage, txLink } from './money-pages';
import { actorOf, attributeForm, attributionTargetFromForm, EXCEPTION_WORDS, reasonFromForm, uncreditedWhy } from './reconciliation-views';
import { pageNumber } from './settings-pages';
import { action, field, page, sendPage, type Dashboard, type SignedIn } from './web';

const PAGE_SIZE = 50;
/** The exception lists count their matches up to this many, as the order list does. */
const COUNT_UP_TO = 1_000;

/** The view's lists, one at a time: the payments to decide, then orders by exception. */
const SHOWN = ['payments', 'paidLate', 'unattributedPayments', 'underpaid', 'manual'] as const satisfies readonly ('payments' | OrderException)[];
type Shown = (typeof SHOWN)[number];
const SHOWN_LABELS: Record<Shown, string> = {
  payments: 'Unattributed payments',
  paidLate: 'Orders paid late',
  unattributedPayments: 'Orders with payments to decide',
  underpaid: 'Underpaid orders',
  manual: 'Orders settled by hand',
};

/**
 * Issue 40 in the dashboard: "Needs attention" (what the service recorded but could not credit,
 * and the orders off the happy path, newest first), a transfer's page with the attribute form,
 * and the attribute and settle actions. Each action calls the API's own domain operation
 * (attributeTransfer, resolveOrder), which checks, changes and audit-logs in one transaction; a
 * refusal (400, 404, 409) is answered on the same page, with nothing changed.
 */
export function mountAttentionPages(app: Express, d: Dashboard): void {
  const { deps } = d;

  app.get(
    '/dashboard/attention',
    page(d, 'viewer', async (req, res, who) => {
      const raw = typeof req.query.show === 'string' ? req.query.show : 'payments';
      const shown: Shown = (SHOWN as readonly string[]).includes(raw) ? (raw as Shown) : 'payments';
      const pageNo = pageNumber(req);
      const lang = langOf(res);
      const tabs = html`<nav class="tabs" aria-label="Lists">${SHOWN.map((s) =>
        html`<a href="/dashboard/attention${s === 'payments' ? '' : `?show=${s}`}"${s === shown ? html` aria-current="page"` : null}>${SHOWN_LABELS[s]}</a>`,
      )}</nav>`;
      let list: Html;
      if (shown === 'payments') {
        const { items, total } = await listTransfers(deps, who.caller.organizationId, { page: pageNo, limit: PAGE_SIZE, sortBy: 'detectedAt', sortOrder: 'desc', attributed: false });
        list = html`<p>What arrived but no order or deposit reference took, newest first. Nothing here was credited; open one to attribute it.</p>
${paymentsTable(d, items.map((t) => presentTransfer(deps.registry, t)))}${pager('/dashboard/attention', {}, pageNo, PAGE_SIZE, total, lang)}`;
      } else {
        const { items, total, totalCapped } = await listOrders(deps, who.caller.organizationId, {
          page: pageNo,
          limit: PAGE_SIZE + 1,
          sortBy: 'createdAt',
          sortOrder: 'desc',
          exception: shown,
          countUpTo: COUNT_UP_TO,
        });
        const orders = items.slice(0, PAGE_SIZE).map((o) => presentOrder(deps, o));
        list = html`<p>Orders: ${EXCEPTION_WORDS[shown]}. Newest first.</p>
<table id="attention-orders"><caption class="skip">${SHOWN_LABELS[shown]}</caption><thead><tr><th>Order</th><th>Reference</th><th>Amount</th><th>Received</th><th>Status</th><th>Created</th></tr></thead><tbody>
${orders.map(
  (o) => html`<tr data-order-id="${o.orderId}"><td class="mono"><a href="/dashboard/orders/${o.orderId}">${o.orderId}</a></td><td>${o.orderReference}</td><td class="num">${o.amount} ${o.currency}</td><td class="num">${o.amountReceived}</td><td>${orderBadges(o)}</td><td>${formatDate(o.createdAt)}</td></tr>`,
)}
</tbody></table>${orders.length === 0 ? html`<p>None.</p>` : null}${offsetPager('/dashboard/attention', { show: shown }, pageNo, items.length > PAGE_SIZE, totalCapped ? `more than ${COUNT_UP_TO}` : String(total), lang)}`;
      }
      await sendPage(d, res, who, '/dashboard/attention', 'Needs attention', html`${tabs}<section class="panel">${list}</section>`);
    }),
  );

  app.get(
    '/dashboard/transfers/:transferId',
    page(d, 'viewer', async (req, res, who) => sendTransferPage(d, res, who, String(req.params.transferId))),
  );

  app.post(
    '/dashboard/transfers/:transferId/attribute',
    action(d, 'admin', async (req, res, who) => {
      const transferId = String(req.params.transferId);
      // The order page's button returns there (the order it names); the transfer page's form to the transfer.
      const back = (target: AttributionTarget | null, top: Html | null, status = 200) =>
        field(req, 'returnTo') === 'order' && target && 'orderId' in target
          ? sendOrderPage(d, res, who, target.orderId, top, status)
          : sendTransferPage(d, res, who, transferId, top, status);
      let target: AttributionTarget | null = null;
      try {
        target = attributionTargetFromForm(req);
        const done = presentTransfer(deps.registry, await attributeTransfer(deps, actorOf(who), transferId, target, reasonFromForm(req)));
        const to = done.orderId ? `order ${done.orderReference ?? done.orderId}` : `deposit reference ${done.depositReference}`;
        await back(target, notice(`Payment ${done.amount} ${done.currency} attributed to ${to}.`));
      } catch (err) {
        await refusal(err, (message, status) => back(target, notice(message, 'error'), status));
      }
    }),
  );

  app.post(
    '/dashboard/orders/:orderId/resolve',
    action(d, 'admin', async (req, res, who) => {
      const orderId = String(req.params.orderId);
      if (field(req, 'status') !== 'completed') {
        return sendOrderPage(d, res, who, orderId, notice('An order is settled by hand only as completed.', 'error'), 400);
      }
      try {
        const settled = await resolveOrder(deps, actorOf(who), orderId, { status: 'completed', reason: reasonFromForm(req) });
        await sendOrderPage(d, res, who, orderId, notice(`Order ${settled.orderReference} settled by hand: completed.`));
      } catch (err) {
        await refusal(err, (message, status) => sendOrderPage(d, res, who, orderId, notice(message, 'error'), status));
      }
    }),
  );
}

/**
 * A domain refusal (bad input, not found, conflict) answered on the page the form came from, with
 * the operation's own message and status; anything else goes on to the error page.
 */
async function refusal(err: unknown, answer: (message: string, status: number) => Promise<void>): Promise<void> {
  if (!(err instanceof AppError) || err.status >= 500 || err.status === 401 || err.status === 403) throw err;
  await answer(err.message, err.status);
}

/** The unattributed payments of the "Needs attention" view: why each was not credited, and who the evidence names. */
function paymentsTable(d: Dashboard, transfers: TransferView[]): Html {
  return html`<table id="attention-payments"><caption class="skip">Unattributed payments</caption><thead><tr><th>Amount</th><th>To</th><th>Transaction</th><th>Why not credited</th><th>Meant for (evidence)</th><th>Detected</th><th></th></tr></thead><tbody>
${transfers.map(
  (t) => html`<tr data-transfer-id="${t.id}" data-reason="${t.unattributedReason ?? ''}"><td class="num">${t.amount} ${t.currency}</td><td class="mono">${t.to}</td><td>${txLink(d, t.chainId, t.txHash)}</td><td>${uncreditedWhy(t)}</td>
<td>${candidateList(t)}</td><td>${formatDate(t.detectedAt)}</td><td><a href="/dashboard/transfers/${t.id}">Decide</a></td></tr>`,
)}
</tbody></table>${transfers.length === 0 ? html`<p>Nothing waits for a decision.</p>` : null}`;
}

function candidateList(t: TransferView): Html {
  if (t.candidates.length === 0) return html`<span class="muted">nobody</span>`;
  return html`<ul class="candidates">${t.candidates.map((c) =>
    html`<li>${c.orderId ? html`<a class="mono" href="/dashboard/orders/${c.orderId}">${c.orderId}</a>` : html`deposit ${c.depositReference}`} (${c.relation})</li>`,
  )}</ul>`;
}

/** A transfer's page: what arrived, why it was not credited, the evidence, and (Admin, Owner) the attribute form. */
async function sendTransferPage(d: Dashboard, res: Response, who: SignedIn, transferId: string, top: Html | null = null, status = 200): Promise<void> {
  const record = await getTransfer(d.deps.db, who.caller.organizationId, transferId);
  const t = presentTransfer(d.deps.registry, record);
  const lang = langOf(res);
  const why = uncreditedWhy(t);
  const decidable = record.t.status !== 'dropped' && awaitsAttribution(record.t);
  await sendPage(
    d,
    res,
    who,
    '/dashboard/attention',
    `${chromeText(lang, 'Transfer')} ${t.id}`,
    html`${top}<section class="panel"><dl>
<dt>Amount</dt><dd>${t.amount} ${t.currency} on ${t.chainId}</dd>
<dt>From</dt><dd class="mono">${t.from}</dd><dt>To</dt><dd class="mono">${t.to}</dd>
<dt>Transaction</dt><dd>${txLink(d, t.chainId, t.txHash)}</dd>
<dt>Mined</dt><dd>${formatDate(t.blockTimestamp)} (block ${t.blockNumber})</dd>
<dt>Status</dt><dd><span class="badge">${t.status}</span> ${t.credited ? html`<span class="badge ok">credited</span>` : null}</dd>
<dt>For</dt><dd>${t.orderId ? html`order <a href="/dashboard/orders/${t.orderId}">${t.orderReference}</a>` : t.depositReference ? html`deposit reference ${t.depositReference}` : html`<span class="badge warn">unattributed</span>`}${why ? html` <span class="why">${why}</span>` : null}</dd>
${t.attributedBy ? html`<dt>Attributed by hand</dt><dd>${t.attributedBy}, ${formatDate(t.attributedAt)}: “${t.attributionReason}”</dd>` : null}
<dt>Meant for (evidence)</dt><dd>${candidateList(t)}</dd>
</dl></section>
${decidable && roleAtLeast(who.session.role, 'admin') ? html`<section class="panel" aria-labelledby="attr-h"><h2 id="attr-h">${chromeText(lang, 'Attribute')}</h2><p>It counts toward the order (same chain and token) or is recorded as the deposit reference's deposit; an expired order it brings to its amount completes by hand.</p>${attributeForm(t, who.session, lang)}</section>` : null}`,
    status,
  );
}
