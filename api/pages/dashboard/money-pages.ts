import { USD } from '../../../core/chains/chain';
import type { Express, Request, Response } from 'express';
import { explorerTxLink, type ChainRegistry } from '../../../core/chains/registry';
import { chainLabel, confirmationsText, longValue } from './cells';
import { getOrder, listOrders, ORDER_SORT_FIELDS, type ListOrdersQuery } from '../../../core/orders/orders';
import { listTransfers, type TransferFilters } from '../../../core/transfers/transfers';
import { listDeposits, type DepositFilters } from '../../../core/deposits/queries';
import { presentOrder, type OrderView } from '../../../core/views/order';
import { presentOrderWithPayments } from '../../../core/orders/exceptions';
import { awaitsAttribution } from '../../../core/reconciliation/attribute-transfer';
import { attributeToOrderForm, exceptionFacts, settleForm, uncreditedWhy, UNATTRIBUTED_REASON_WORDS } from './reconciliation-views';
import { presentTransfer, type TransferView } from '../../../core/views/transfer';
import { presentDeposit } from '../../../core/views/deposit';
import { DEPOSIT_STATUSES } from '../../../core/views/deposit';
import { TRANSFER_STATUSES } from '../../../core/transfers/transfers';
import { chromeText, langOf } from './chrome-text';
import { html, type Html } from '../html';
import type { Language } from '../i18n';
import { formatDate, keysetPager, notice, offsetPager, pager, postButton } from './layout';
import { AppError } from '../../../core/platform/errors';
import { exportOrders } from '../../../core/exports/orders-export';
import { exportTransfers } from '../../../core/exports/transfers-export';
import { exportDeposits } from '../../../core/exports/deposits-export';
import { sendCsvDownload } from '../../csv-answer';
import { eventDeliveriesTable } from './webhook-views';
import { listWebhookEvents } from '../../../core/webhooks/history';
import { roleAtLeast } from '../../../core/organizations/roles';
import { page, sendPage, type Dashboard, type SignedIn } from './web';
import { pageNumber } from './settings-pages';
import { issueRefundForm, refundErrorOf } from './refund-pages';

const PAGE_SIZE = 50;
/** The order list counts its matches up to this many (a large organization's count would cost more than the page). */
const COUNT_UP_TO = 1_000;

/** A query parameter as a short string, or undefined. */
function q(req: Request, name: string, max = 255): string | undefined {
  const v = req.query[name];
  return typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, max) : undefined;
}
function oneOf<T extends string>(value: string | undefined, allowed: readonly T[]): T | undefined {
  return allowed.includes(value as T) ? (value as T) : undefined;
}

/** The orders page's filters (its list and its CSV): `q` is the search box (GET /orders?search=). */
function orderFilters(req: Request) {
  return {
    q: q(req, 'q'),
    status: oneOf(q(req, 'status'), ['pending', 'completed', 'expired'] as const),
    currency: q(req, 'currency', 16)?.toUpperCase(),
    chainId: q(req, 'chainId', 64),
  };
}

/** The transfers page's filters: its search box (GET /transfers?search=) and the unattributed inbox. */
function transferFilters(req: Request): TransferFilters {
  return { status: oneOf(q(req, 'status'), TRANSFER_STATUSES), search: q(req, 'q'), ...(q(req, 'view') === 'unattributed' ? { attributed: false } : {}) };
}

function depositFilters(req: Request): DepositFilters {
  return {
    depositReference: q(req, 'depositReference'),
    status: oneOf(q(req, 'status'), DEPOSIT_STATUSES),
    currency: q(req, 'currency', 16)?.toUpperCase(),
    chainId: q(req, 'chainId', 64),
  };
}

/** The list's "Export CSV" link: its CSV route with the filters shown (empty ones left out). */
function exportLink(path: string, filters: Record<string, string | boolean | undefined>, lang: Language): Html {
  const query = new URLSearchParams(Object.entries(filters).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== '')).toString();
  return html`<a class="export" href="${path}${query ? `?${query}` : ''}">${chromeText(lang, 'Export CSV')}</a>`;
}

/** Decimal strings compared exactly (no float): -1, 0, 1. */
function compareDecimal(a: string, b: string): number {
  const [ai, af = ''] = a.split('.');
  const [bi, bf = ''] = b.split('.');
  const width = Math.max(af.length, bf.length);
  const x = BigInt(ai + af.padEnd(width, '0'));
  const y = BigInt(bi + bf.padEnd(width, '0'));
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The order's status and what a merchant needs to know beside it: under- or overpaid, paid late. */
export function orderBadges(o: OrderView): Html {
  const cls = o.status === 'completed' ? 'ok' : o.status === 'expired' ? 'bad' : 'warn';
  const received = compareDecimal(o.amountReceived, o.amount);
  const extra: Html[] = [];
  if (received > 0) extra.push(html` <span class="badge warn">overpaid</span>`);
  if (received < 0 && o.amountReceived !== '0' && compareDecimal(o.amountReceived, '0') > 0) extra.push(html` <span class="badge warn">underpaid</span>`);
  if (o.completedAt && o.completedAt > o.expiresAt) extra.push(html` <span class="badge warn">late</span>`);
  // Issue 40's exceptions that under- and overpaid above do not already say.
  if (o.exceptions.includes('paidLate')) extra.push(html` <span class="badge warn">paid late</span>`);
  if (o.exceptions.includes('unattributedPayments')) extra.push(html` <span class="badge warn">payments to decide</span>`);
  if (o.exceptions.includes('manual')) extra.push(html` <span class="badge">settled by hand</span>`);
  return html`<span class="badge ${cls}" data-status="${o.status}">${o.status}</span>${extra}`;
}

export function mountMoneyPages(app: Express, d: Dashboard): void {
  const { deps } = d;
  const link = (chainId: string, txHash: string) => txLink(d, chainId, txHash);

  app.get(
    '/dashboard/orders',
    page(d, 'viewer', async (req, res, who) => {
      const { q: search, ...filters } = orderFilters(req);
      const pageNo = pageNumber(req);
      const sortBy = oneOf(q(req, 'sortBy'), ORDER_SORT_FIELDS) ?? 'createdAt';
      const sortOrder = q(req, 'sortOrder') === 'asc' ? 'asc' : 'desc';
      const after = q(req, 'after', 64);
      const before = q(req, 'before', 64);
      // The search box is GET /orders?search= (core/chains/search-term.ts): an order id, a payment's tx
      // hash, the payment address of any family, or part of the reference.
      // The API's list operation with two page-reader choices: keyset paging in createdAt order
      // (deep pages cost what the first does) and a count that stops at COUNT_UP_TO.
      const keyset = sortBy === 'createdAt' && (after || before || !req.query.page);
      const query: ListOrdersQuery = {
        page: keyset ? 1 : pageNo,
        limit: PAGE_SIZE + 1,
        sortBy,
        sortOrder,
        ...filters,
        search,
        countUpTo: COUNT_UP_TO,
        ...(keyset && after ? { cursor: { after } } : keyset && before ? { cursor: { before } } : {}),
      };
      const { list: result, refused } = await listUnlessSearchRefused(() => listOrders(deps, who.caller.organizationId, query), { items: [], total: 0, totalCapped: false });
      // One row more than the page says whether there is another page in the direction walked.
      const more = result.items.length > PAGE_SIZE;
      const rows = before ? result.items.slice(more ? 1 : 0) : result.items.slice(0, PAGE_SIZE);
      const items: OrderView[] = rows.map((o) => presentOrder(deps, o));
      const keep = { q: search, ...filters, sortBy: sortBy === 'createdAt' ? undefined : sortBy, sortOrder: sortOrder === 'asc' ? 'asc' : undefined };
      const totalText = result.totalCapped ? `more than ${COUNT_UP_TO.toLocaleString('en')}` : String(result.total);
      const paging = keyset
        ? keysetPager(
            '/dashboard/orders',
            keep,
            {
              newer: items.length && (after || (before && more)) ? items[0].orderId : null,
              older: items.length && (before || more) ? items[items.length - 1].orderId : null,
              totalText,
            },
            langOf(res),
          )
        : offsetPager('/dashboard/orders', keep, pageNo, more, totalText, langOf(res));
      const chains = deps.registry.list();
      // The symbols enabled chains offer (the chains file may add some); one asked for in the URL that
      // no chain offers any more (an old order's token) stays selectable, so the form shows the filter applied.
      // USD: orders priced in dollars whose payer picks the route.
      const offered = [...deps.registry.offeredCurrencies(), USD].sort();
      const currencies = filters.currency && !offered.includes(filters.currency) ? [...offered, filters.currency].sort() : offered;
      await sendPage(
          d,
          res,
          who,
          '/dashboard/orders',
          'Orders',
          html`${notice(refused, 'error')}<form method="get" action="/dashboard/orders" class="panel row" role="search">
<div><label for="q">Search</label><input id="q" name="q" type="text" value="${search ?? ''}" placeholder="reference, ord_…, tx hash, address"></div>
<div><label for="status">Status</label><select id="status" name="status"><option value="">all</option>${['pending', 'completed', 'expired'].map((s) => html`<option${filters.status === s ? html` selected` : null}>${s}</option>`)}</select></div>
<div><label for="currency">Currency</label><select id="currency" name="currency"><option value="">all</option>${currencies.map((c) => html`<option${filters.currency === c ? html` selected` : null}>${c}</option>`)}</select></div>
<div><label for="chain">Chain</label><select id="chain" name="chainId"><option value="">all</option>${chains.map((c) => html`<option${filters.chainId === c.chainId ? html` selected` : null}>${c.chainId}</option>`)}</select></div>
<div><button type="submit">${chromeText(langOf(res), 'Filter')}</button> ${exportLink('/dashboard/orders.csv', { q: search, ...filters }, langOf(res))}</div></form>
<section class="panel"><table id="orders"><caption class="skip">Orders</caption><thead><tr><th>Order</th><th>Reference</th><th>Amount</th><th>Received</th><th>Chain</th><th>Status</th><th>Created</th></tr></thead><tbody>
${items.map(
  (o) => html`<tr data-order-id="${o.orderId}"><td class="mono"><a href="/dashboard/orders/${o.orderId}">${o.orderId}</a></td><td>${o.orderReference}</td><td class="num">${o.amount} ${o.currency}</td><td class="num">${o.amountReceived}</td><td>${chainLabel(deps.registry, o.chainId)}</td><td>${orderBadges(o)}</td><td>${formatDate(o.createdAt)}</td></tr>`,
)}
</tbody></table>${items.length === 0 ? html`<p>No orders match.</p>` : null}${paging}</section>`,
          refused ? 400 : 200,
      );
    }),
  );

  // The current filter's CSV: the API's export operation (GET /exports/orders.csv), whole, no cap.
  app.get(
    '/dashboard/orders.csv',
    page(d, 'viewer', async (req, res, who) => {
      const { q: search, ...filters } = orderFilters(req);
      await sendCsvDownload(deps.logger, req, res, await exportOrders(deps, who.caller.organizationId, { ...filters, search }, {}));
    }),
  );

  app.get(
    '/dashboard/orders/:orderId',
    page(d, 'viewer', async (req, res, who) => {
      // A refused "Issue refund" form comes back here with its reason (refund-pages.ts).
      const refundError = refundErrorOf(req);
      await sendOrderPage(d, res, who, String(req.params.orderId), refundError ? notice(refundError, 'error') : null, refundError ? 400 : 200);
    }),
  );

  app.get(
    '/dashboard/deposits',
    page(d, 'viewer', async (req, res, who) => {
      const pageNo = pageNumber(req);
      const filters = depositFilters(req);
      const { items, total } = await listDeposits(deps, who.caller.organizationId, { page: pageNo, limit: PAGE_SIZE, sortBy: 'detectedAt', sortOrder: 'desc', ...filters });
      const deposits = items.map(presentDeposit);
      await sendPage(
          d,
          res,
          who,
          '/dashboard/deposits',
          'Deposits',
          html`<form method="get" action="/dashboard/deposits" class="panel row" role="search">
<div><label for="ref">Deposit reference</label><input id="ref" name="depositReference" type="text" value="${filters.depositReference ?? ''}"></div>
<div><label for="dstatus">Status</label><select id="dstatus" name="status"><option value="">all</option>${DEPOSIT_STATUSES.map((s) => html`<option${filters.status === s ? html` selected` : null}>${s}</option>`)}</select></div>
<div><button type="submit">${chromeText(langOf(res), 'Filter')}</button> ${exportLink('/dashboard/deposits.csv', filters, langOf(res))}</div></form>
<section class="panel"><table id="deposits"><caption class="skip">Deposits</caption><thead><tr><th>Deposit</th><th>Reference</th><th>Amount</th><th>Chain</th><th>Status</th><th>Transaction</th><th>Detected</th></tr></thead><tbody>
${deposits.map(
  (x) => html`<tr><td class="mono">${x.depositId}</td><td>${x.depositReference}</td><td class="num">${x.amount} ${x.currency}</td><td>${chainLabel(deps.registry, x.chainId)}</td><td><span class="badge">${x.status}</span> ${confirmationsText(x.status, x.confirmations, x.requiredConfirmations)}</td><td>${link(x.chainId, x.txHash)}</td><td>${formatDate(x.detectedAt)}</td></tr>`,
)}
</tbody></table>${pager('/dashboard/deposits', filters, pageNo, PAGE_SIZE, total, langOf(res))}</section>`,
      );
    }),
  );

  app.get(
    '/dashboard/transfers',
    page(d, 'viewer', async (req, res, who) => {
      const pageNo = pageNumber(req);
      const inbox = q(req, 'view') === 'unattributed';
      const filters = transferFilters(req);
      const read = () => listTransfers(deps, who.caller.organizationId, { page: pageNo, limit: PAGE_SIZE, sortBy: 'detectedAt', sortOrder: 'desc', ...filters });
      const { list: { items, total }, refused } = await listUnlessSearchRefused(read, { items: [], total: 0 });
      await sendPage(
          d,
          res,
          who,
          '/dashboard/transfers',
          inbox ? 'Unattributed transfers' : 'Transfers',
          html`<p>${inbox ? html`What no order or deposit reference took; each row says why. Decide them under <a href="/dashboard/attention">Needs attention</a>. <a href="/dashboard/transfers">All transfers</a>` : html`<a href="/dashboard/transfers?view=unattributed">Unattributed inbox</a>`}</p>
${notice(refused, 'error')}<form method="get" action="/dashboard/transfers" class="panel row" role="search">${inbox ? html`<input type="hidden" name="view" value="unattributed">` : null}
<div><label for="q">Search</label><input id="q" name="q" type="text" value="${filters.search ?? ''}" placeholder="tx hash, address, ord_…, reference"></div>
<div><button type="submit">${chromeText(langOf(res), 'Filter')}</button> ${exportLink('/dashboard/transfers.csv', { status: filters.status, q: filters.search, view: inbox ? 'unattributed' : undefined }, langOf(res))}</div></form>
<section class="panel">${transferTable(items.map((t) => presentTransfer(deps.registry, t)), link, deps.registry)}${pager('/dashboard/transfers', { status: filters.status, q: filters.search, view: inbox ? 'unattributed' : undefined }, pageNo, PAGE_SIZE, total, langOf(res))}</section>`,
          refused ? 400 : 200,
      );
    }),
  );

  // The transfers and deposits lists' CSVs: the API's export operations, as the orders list's.
  app.get(
    '/dashboard/transfers.csv',
    page(d, 'viewer', async (req, res, who) => {
      await sendCsvDownload(deps.logger, req, res, await exportTransfers(deps, who.caller.organizationId, transferFilters(req), {}));
    }),
  );
  app.get(
    '/dashboard/deposits.csv',
    page(d, 'viewer', async (req, res, who) => {
      await sendCsvDownload(deps.logger, req, res, await exportDeposits(deps, who.caller.organizationId, depositFilters(req), {}));
    }),
  );
}

/**
 * An order's page: its facts, exceptions and resolution; every payment to its address during its
 * life and its late window (its own transfers, and the unattributed ones that name it), with why
 * each was not credited; and, for Admins and Owners, "Attribute to this order" on each one that
 * waits for a decision and "Settle by hand" while it is not completed. `top` is an action's answer.
 */
export async function sendOrderPage(d: Dashboard, res: Response, who: SignedIn, orderId: string, top: Html | null = null, status = 200): Promise<void> {
  const { deps } = d;
  const lang = langOf(res);
  const order = await presentOrderWithPayments(deps, await getOrder(deps.db, who.caller.organizationId, orderId));
  const { items } = await listTransfers(deps, who.caller.organizationId, { page: 1, limit: 100, sortBy: 'detectedAt', sortOrder: 'asc', orderId: order.orderId });
  // The order's events with their deliveries: the API's event list (GET /webhooks/events), by order.
  const events = await listWebhookEvents(deps.db, who.caller, { page: 1, limit: 50, sortOrder: 'asc', orderId: order.orderId });
  const admin = roleAtLeast(who.session.role, 'admin');
  const redeliver = (eventId: string, endpointId: string) =>
    postButton(`/dashboard/settings/webhooks/${endpointId}/events/${eventId}/redeliver`, who.session, 'Redeliver', 'secondary', lang);
  // A payment the order may take by hand: one waiting for a decision, in the order's own chain and token.
  const attributable = (t: { id: string; chainId: string; currency: string }, waits: boolean) =>
    admin && waits && t.chainId === order.chainId && t.currency === order.currency ? attributeToOrderForm(t.id, order.orderId, who.session, lang) : null;
  const own = items.map((r) => ({ view: presentTransfer(deps.registry, r), waits: awaitsAttribution(r.t) }));
  const payments = html`<table class="payments"><caption class="skip">Payments to its address</caption><thead><tr><th>Amount</th><th>From</th><th>Transaction</th><th>Mined</th><th>State</th>${admin ? html`<th>Decision</th>` : null}</tr></thead><tbody>
${own.map(
  ({ view: t, waits }) => html`<tr data-transfer-id="${t.id}"><td class="num">${t.amount} ${t.currency}</td><td class="mono">${t.from}</td><td>${txLink(d, t.chainId, t.txHash)}</td><td>${formatDate(t.blockTimestamp)}</td>
<td><span class="badge">${t.status}</span> ${t.credited ? html`<span class="badge ok">credited</span>` : null}${t.attributedBy ? html` attributed by hand: ${t.attributedBy}, ${formatDate(t.attributedAt)}: “${t.attributionReason}”` : null}${uncreditedWhy(t) ? html` <span class="why">${uncreditedWhy(t)}</span>` : null}</td>${admin ? html`<td>${attributable(t, waits)}</td>` : null}</tr>`,
)}
${order.unattributedPayments.map(
  (p) => html`<tr data-transfer-id="${p.transferId}"><td class="num">${p.amount} ${p.currency}</td><td class="mono">${p.from}</td><td>${txLink(d, p.chainId, p.txHash)}</td><td>${formatDate(p.blockTimestamp)}</td>
<td><span class="badge warn">unattributed</span> <span class="why">${UNATTRIBUTED_REASON_WORDS[p.reason]}</span> <a href="/dashboard/transfers/${p.transferId}">details</a></td>${admin ? html`<td>${attributable({ id: p.transferId, chainId: p.chainId, currency: p.currency }, true)}</td>` : null}</tr>`,
)}
</tbody></table>${own.length + order.unattributedPayments.length === 0 ? html`<p>None.</p>` : null}`;
  await sendPage(
    d,
    res,
    who,
    '/dashboard/orders',
    `${chromeText(lang, 'Order')} ${order.orderReference}`,
    html`${top}<section class="panel"><dl>
<dt>Order</dt><dd class="mono">${order.orderId}</dd>
<dt>Status</dt><dd>${orderBadges(order)}</dd>
<dt>Amount</dt><dd>${order.amount} ${order.currency} ${order.route ? `by ${order.route.currency} ` : ''}on ${chainLabel(deps.registry, order.chainId)} (received ${order.amountReceived})</dd>
${order.chosenRoutes && order.chosenRoutes.length > 1 ? html`<dt>Routes given</dt><dd>${order.chosenRoutes.map((r) => html`<div>${r.currency} on ${chainLabel(deps.registry, r.chainId)}: <span class="mono">${r.address}</span>, received ${r.amountReceived}</div>`)}</dd>` : null}
<dt>Address</dt><dd class="mono">${order.address}</dd>
<dt>Payment page</dt><dd><a href="${order.paymentUrl}" rel="noopener noreferrer">open</a></dd>
<dt>Created</dt><dd>${formatDate(order.createdAt)}</dd><dt>Expires</dt><dd>${formatDate(order.expiresAt)} (grace until ${formatDate(order.graceEndsAt)})</dd>
${order.completedAt ? html`<dt>Completed</dt><dd>${formatDate(order.completedAt)}</dd>` : null}${order.expiredAt ? html`<dt>Expired</dt><dd>${formatDate(order.expiredAt)}</dd>` : null}
${exceptionFacts(order)}
</dl></section>
<h2>${chromeText(lang, 'Payments to its address')}</h2><section class="panel">${payments}</section>
<h2>${chromeText(lang, 'Refunds')}</h2><section class="panel" aria-labelledby="refunds-h"><p id="refunds-h">Refunded (not cancelled or expired): ${order.amountRefunded} ${order.currency} of ${order.amountReceived} received. <a href="/dashboard/refunds?orderId=${order.orderId}">Its refunds</a></p>
${roleAtLeast(who.session.role, 'member') && order.amountReceived !== '0' ? issueRefundForm(order.orderId, who.session, lang, order.amountExcess !== '0' ? order.amountExcess : order.amountReceived) : null}</section>
${admin && order.status !== 'completed' ? html`<section class="panel" aria-labelledby="settle-h"><h2 id="settle-h">${chromeText(lang, 'Settle by hand')}</h2><p>Paid in a way the service could not credit (off-chain, or outside its window)? Completing it by hand sends order.completed with resolution manual.</p>${settleForm(order.orderId, who.session, lang)}</section>` : null}
<h2>${chromeText(lang, 'Events and webhook deliveries')}</h2><section class="panel">${eventDeliveriesTable(events.items, admin ? redeliver : null)}</section>`,
    status,
  );
}

/** A transaction hash, linked to the chain's explorer when it has one. */
export function txLink(d: Dashboard, chainId: string, txHash: string): Html {
  const chain = d.deps.registry.get(chainId);
  const href = chain ? explorerTxLink(chain, txHash) : null;
  return longValue(txHash, href);
}

/**
 * A list whose search text the list refuses (a mistyped address, core/chains/search-term.ts) is
 * answered by the list page itself: the reason above the box, the box keeping the text to correct,
 * no rows. Not the bare error page, which had neither the box nor the navigation.
 */
async function listUnlessSearchRefused<T>(read: () => Promise<T>, none: T): Promise<{ list: T; refused: string | null }> {
  try {
    return { list: await read(), refused: null };
  } catch (err) {
    const problem = err instanceof AppError && err.code === 'VALIDATION_ERROR' && Array.isArray(err.details) ? (err.details as { field?: string; message?: string }[]).find((x) => x.field === 'search') : undefined;
    if (!problem) throw err;
    return { list: none, refused: `The search text ${problem.message ?? 'is not valid'}.` };
  }
}

function transferTable(transfers: TransferView[], link: (chainId: string, txHash: string) => Html, registry: Pick<ChainRegistry, 'get'>): Html {
  return html`<table class="transfers"><caption class="skip">Transfers</caption><thead><tr><th>Amount</th><th>Chain</th><th>To</th><th>Transaction</th><th>Status</th><th>For</th><th>Detected</th></tr></thead><tbody>
${transfers.map(
  (t) => html`<tr data-transfer-id="${t.id}"><td class="num">${t.amount} ${t.currency}</td><td>${chainLabel(registry, t.chainId)}</td><td>${longValue(t.to)}</td><td>${link(t.chainId, t.txHash)}</td><td><span class="badge">${t.status}</span> ${confirmationsText(t.status, t.confirmations, t.requiredConfirmations)}</td>
<td>${t.orderId ? html`<a href="/dashboard/orders/${t.orderId}">${t.orderReference}</a>` : t.depositReference ? html`deposit ${t.depositReference}` : html`<a href="/dashboard/transfers/${t.id}"><span class="badge warn">unattributed</span></a>`}${uncreditedWhy(t) ? html` <span class="why">${uncreditedWhy(t)}</span>` : null}</td><td>${formatDate(t.detectedAt)}</td></tr>`,
)}
</tbody></table>${transfers.length === 0 ? html`<p>None.</p>` : null}`;
}
