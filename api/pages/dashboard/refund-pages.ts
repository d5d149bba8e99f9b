import type { Express, Request, Response } from 'express';
import { html, type Html } from '../html';
import { REFUND_STATUSES, type RefundStatus } from '../../../db/schema';
import { roleAtLeast } from '../../../core/organizations/roles';
import { AppError } from '../../../core/platform/errors';
import { REASON_MAX_LENGTH } from '../../../core/reconciliation/actor';
import { approveRefund, cancelRefund, getRefund, issueRefund, issueRequestedRefund, listRefunds } from '../../../core/refunds/refunds';
import { presentRefund, type RefundView } from '../../../core/views/refund';
import { exportApprovedRefundsCsv, safeBatchOfApprovedRefunds } from '../../../core/refunds/refund-export';
import { sendCsvDownload } from '../../csv-answer';
import type { Session } from '../../../core/users/sessions';
import type { Language } from '../i18n';
import { chainLabel } from './cells';
import { chromeText, langOf } from './chrome-text';
import { csrfField, formatDate, notice, pager, postButton } from './layout';
import { actorOf } from './reconciliation-views';
import { pageNumber } from './settings-pages';
import { action, field, page, sendPage, type Dashboard, type SignedIn } from './web';

const PAGE_SIZE = 50;

/**
 * The dashboard's refunds (issue 42): the list with its status filter, a refund's page with its
 * claim link to copy and, for Admins and Owners, issue / approve / cancel buttons; the order page's
 * "Issue refund" form posts here. Every button calls the API's domain operation (core/refunds/).
 */
export function mountRefundPages(app: Express, d: Dashboard): void {
  const { deps } = d;

  app.get(
    '/dashboard/refunds',
    page(d, 'viewer', async (req, res, who) => {
      const lang = langOf(res);
      const statusParam = typeof req.query.status === 'string' ? req.query.status : '';
      const status = (REFUND_STATUSES as readonly string[]).includes(statusParam) ? (statusParam as RefundStatus) : undefined;
      const orderId = typeof req.query.orderId === 'string' && req.query.orderId.length <= 64 ? req.query.orderId : undefined;
      const pageNo = pageNumber(req);
      const { items, total } = await listRefunds(deps.db, who.caller.organizationId, { page: pageNo, limit: PAGE_SIZE, sortBy: 'createdAt', sortOrder: 'desc', kind: 'refund', status, orderId });
      const views = items.map((r) => presentRefund(deps, r));
      const filter = html`<form method="get" action="/dashboard/refunds" class="row filters"><div><label for="f-status">Status</label><select id="f-status" name="status"><option value="">any</option>${REFUND_STATUSES.map(
        (s) => html`<option value="${s}"${s === status ? html` selected` : null}>${s}</option>`,
      )}</select></div>${orderId ? html`<input type="hidden" name="orderId" value="${orderId}">` : null}<div><button type="submit">${chromeText(lang, 'Filter')}</button></div></form>`;
      const table = html`<table class="refunds"><thead><tr><th>Refund</th><th>Status</th><th>Amount</th><th>For</th><th>Destination</th><th>Created</th><th>Expires</th></tr></thead><tbody>
${views.map(
  (r) => html`<tr data-refund-id="${r.id}"><td><a href="/dashboard/refunds/${r.id}" class="mono">${r.id}</a></td><td>${statusBadge(r.status)}</td><td class="num">${r.amount} ${r.currency}</td>
<td>${sourceLink(r)}</td><td class="mono">${r.destination ?? '—'}</td><td>${formatDate(r.createdAt)}</td><td>${formatDate(r.expiresAt)}</td></tr>`,
)}
</tbody></table>${views.length === 0 ? html`<p>None.</p>` : null}`;
      const exportLinks = html`<p>Approved refunds and payouts for your wallet: <a href="/dashboard/refunds/export?format=safe">Safe batch (JSON)</a> · <a href="/dashboard/refunds/export?format=csv">CSV</a></p>`;
      await sendPage(
        d,
        res,
        who,
        '/dashboard/refunds',
        chromeText(lang, 'Refunds'),
        html`<section class="panel">${filter}${table}${pager('/dashboard/refunds', { status, orderId }, pageNo, PAGE_SIZE, total, lang)}${exportLinks}</section>`,
      );
    }),
  );

  // Before /dashboard/refunds/:refundId, which would take "export" for an id.
  app.get(
    '/dashboard/refunds/export',
    page(d, 'viewer', async (req, res, who) => {
      if (req.query.format === 'csv') return sendCsvDownload(deps.logger, req, res, await exportApprovedRefundsCsv(deps, who.caller.organizationId));
      const batch = await safeBatchOfApprovedRefunds(deps, who.caller.organizationId);
      res.setHeader('Content-Disposition', 'attachment; filename="refunds-safe-batch.json"');
      res.status(200).type('application/json').send(JSON.stringify(batch, null, 2));
    }),
  );

  app.get(
    '/dashboard/refunds/:refundId',
    page(d, 'viewer', async (req, res, who) => sendRefundPage(d, res, who, String(req.params.refundId))),
  );

  // The issue form of the order page.
  app.post(
    '/dashboard/orders/:orderId/refunds',
    action(d, 'member', async (req, res, who) => {
      const orderId = String(req.params.orderId);
      try {
        const amount = field(req, 'amount').trim();
        const reason = field(req, 'reason');
        if (reason.length > REASON_MAX_LENGTH) throw new AppError('VALIDATION_ERROR', `The reason is longer than ${REASON_MAX_LENGTH} characters`);
        const refund = await issueRefund(deps, actorOf(who), roleAtLeast(who.session.role, 'admin'), { orderId }, { amount: amount === '' ? undefined : amount, reason });
        await sendRefundPage(d, res, who, refund.id, notice(refund.status === 'requested' ? 'Refund requested: an Admin or Owner issues it.' : 'Refund issued: send the claim link to the payer.'), 201);
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500 || err.status === 401 || err.status === 403) throw err;
        res.redirect(303, `/dashboard/orders/${encodeURIComponent(orderId)}?refundError=${encodeURIComponent(err.message.slice(0, 300))}`);
      }
    }),
  );

  for (const [verb, minRole, run, done] of [
    ['issue', 'admin', (who: SignedIn, id: string) => issueRequestedRefund(deps, actorOf(who), id), 'Refund issued.'],
    ['approve', 'admin', (who: SignedIn, id: string) => approveRefund(deps, actorOf(who), id), 'Approved: pay it from your wallet with the payment link below.'],
    ['cancel', 'admin', (who: SignedIn, id: string) => cancelRefund(deps, actorOf(who), id), 'Cancelled.'],
  ] as const) {
    app.post(
      `/dashboard/refunds/:refundId/${verb}`,
      action(d, minRole, async (req, res, who) => {
        const id = String(req.params.refundId);
        try {
          await run(who, id);
          await sendRefundPage(d, res, who, id, notice(done));
        } catch (err) {
          if (!(err instanceof AppError) || err.status >= 500 || err.status === 401 || err.status === 403 || err.status === 404) throw err;
          await sendRefundPage(d, res, who, id, notice(err.message, 'error'), err.status);
        }
      }),
    );
  }
}

/** A refund's page: its facts, its claim link to copy, its payment link once approved, and the buttons its status allows. */
export async function sendRefundPage(d: Dashboard, res: Response, who: SignedIn, refundId: string, top: Html | null = null, status = 200): Promise<void> {
  const { deps } = d;
  const lang = langOf(res);
  const r = presentRefund(deps, await getRefund(deps.db, who.caller.organizationId, refundId));
  const admin = roleAtLeast(who.session.role, 'admin');
  const payout = r.kind === 'payout';
  const button = (verb: string, label: string, cls = 'secondary') => postButton(`/dashboard/refunds/${r.id}/${verb}`, who.session, label, cls, lang);
  const buttons = admin
    ? html`${r.status === 'requested' ? button('issue', 'Issue', 'primary') : null}${r.status === 'claimed' ? button('approve', 'Approve', 'primary') : null}${['requested', 'awaiting_claim', 'claimed', 'approved'].includes(r.status) ? button('cancel', 'Cancel') : null}`
    : null;
  await sendPage(
    d,
    res,
    who,
    payout ? '/dashboard/payouts' : '/dashboard/refunds',
    `${chromeText(lang, payout ? 'Payout' : 'Refund')} ${r.id}`,
    html`${top}<section class="panel"><dl>
<dt>${payout ? 'Payout' : 'Refund'}</dt><dd class="mono">${r.id}</dd>
<dt>Status</dt><dd>${statusBadge(r.status)}</dd>
<dt>Amount</dt><dd>${r.amount} ${r.currency} on ${chainLabel(deps.registry, r.chainId)}</dd>
${payout ? null : html`<dt>For</dt><dd>${sourceLink(r)}</dd>`}
<dt>Reason</dt><dd>${r.reason}</dd>
<dt>Claim link</dt><dd>${r.claimUrl ? html`<input class="mono copy" id="claim-url" type="text" readonly value="${r.claimUrl}" aria-label="Claim link: copy it and send it to the ${payout ? 'recipient' : 'payer'}">` : 'not issued yet (requested)'}</dd>
<dt>Destination</dt><dd class="mono">${r.destination ?? '—'}</dd>
<dt>Paid</dt><dd>${r.amountPaid} ${r.currency}${r.txHash ? html` · <span class="mono" id="tx-hash">${r.txHash}</span>` : null}</dd>
${r.paymentUri ? html`<dt>Pay it</dt><dd><a id="payment-uri" class="mono" href="${r.paymentUri}">${r.paymentUri}</a></dd>` : null}
<dt>Requested by</dt><dd>${r.requestedBy}, ${formatDate(r.createdAt)}</dd>
${r.issuedBy ? html`<dt>Issued by</dt><dd>${r.issuedBy}, ${formatDate(r.issuedAt)}</dd>` : null}
${r.claimedAt ? html`<dt>Claimed</dt><dd>${formatDate(r.claimedAt)}</dd>` : null}
${r.approvedBy ? html`<dt>Approved by</dt><dd>${r.approvedBy}, ${formatDate(r.approvedAt)}</dd>` : null}
${r.cancelledBy ? html`<dt>Cancelled by</dt><dd>${r.cancelledBy}, ${formatDate(r.cancelledAt)}</dd>` : null}
<dt>Expires</dt><dd>${formatDate(r.expiresAt)}</dd>
</dl>${buttons ? html`<p class="actions">${buttons}</p>` : null}</section>`,
    status,
  );
}

/** The order page's "Issue refund" form (Members request; Admins and Owners issue). */
export function issueRefundForm(orderId: string, session: Session, lang: Language, suggested: string): Html {
  return html`<form method="post" action="/dashboard/orders/${orderId}/refunds" class="row issue-refund">${csrfField(session)}
<div><label for="refund-amount">Amount</label><input id="refund-amount" name="amount" type="text" inputmode="decimal" placeholder="${suggested}" aria-describedby="refund-amount-hint"><span class="hint" id="refund-amount-hint">Empty: the excess of an overpaid order, else all it received.</span></div>
<div class="grow"><label for="refund-reason">Reason</label><input id="refund-reason" name="reason" type="text" required maxlength="${REASON_MAX_LENGTH}" placeholder="why, in your words (kept in the audit log)"></div>
<div><button type="submit">${chromeText(lang, 'Issue refund')}</button></div></form>`;
}

/** The refund error a failed issue form left in the order page's URL (a redirect back carries it). */
export function refundErrorOf(req: Request): string | null {
  const text = req.query.refundError;
  return typeof text === 'string' && text.length <= 300 ? text : null;
}

export function statusBadge(status: RefundView['status']): Html {
  const cls = status === 'completed' ? 'ok' : status === 'cancelled' || status === 'expired' ? '' : 'warn';
  return html`<span class="badge ${cls}">${status.replace('_', ' ')}</span>`;
}

function sourceLink(r: RefundView): Html {
  if (r.orderId) return html`order <a class="mono" href="/dashboard/orders/${r.orderId}">${r.orderId}</a>`;
  if (r.transferId) return html`transfer <a class="mono" href="/dashboard/transfers/${r.transferId}">${r.transferId}</a>`;
  return html`deposit reference ${r.depositReference ?? '—'}`;
}
