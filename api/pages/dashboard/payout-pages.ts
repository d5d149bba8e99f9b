import type { Express, Request, Response } from 'express';
import { html, type Html } from '../html';
import { REFUND_STATUSES, type RefundStatus } from '../../../db/schema';
import { roleAtLeast } from '../../../core/organizations/roles';
import { AppError, validationError } from '../../../core/platform/errors';
import { REASON_MAX_LENGTH } from '../../../core/reconciliation/actor';
import { listRefunds } from '../../../core/refunds/refunds';
import { issuePayout } from '../../../core/refunds/payouts';
import { presentRefund } from '../../../core/views/refund';
import { chainLabel } from './cells';
import { chromeText, langOf } from './chrome-text';
import { csrfField, formatDate, notice, pager } from './layout';
import { actorOf } from './reconciliation-views';
import { pageNumber } from './settings-pages';
import { sendRefundPage, statusBadge } from './refund-pages';
import { action, field, page, sendPage, type Dashboard, type SignedIn } from './web';

const PAGE_SIZE = 50;

/** What the "New payout" form sent, kept in the form when it is refused. */
interface PayoutForm {
  amount: string;
  token: string;
  reason: string;
  destination: string;
  confirmation: string;
}

/**
 * The dashboard's payouts (issue 42): the list of payouts (refunds of kind payout) with a status
 * filter and, for Admins and Owners, the "New payout" form, which calls the API's domain operation
 * (core/refunds/payouts.ts issuePayout). A payout's page, approve and cancel are the refund's
 * (refund-pages.ts): one presenter, one code path.
 */
export function mountPayoutPages(app: Express, d: Dashboard): void {
  app.get(
    '/dashboard/payouts',
    page(d, 'viewer', async (req, res, who) => sendPayoutsPage(d, req, res, who)),
  );

  app.post(
    '/dashboard/payouts',
    action(d, 'admin', async (req, res, who) => {
      const form: PayoutForm = {
        amount: field(req, 'amount').trim(),
        token: field(req, 'token'),
        reason: field(req, 'reason'),
        destination: field(req, 'destination').trim(),
        confirmation: field(req, 'confirmation').trim(),
      };
      try {
        if (form.reason.length > REASON_MAX_LENGTH) throw validationError(`The reason is longer than ${REASON_MAX_LENGTH} characters`);
        const pair = /^([A-Za-z]{1,16})@([A-Za-z0-9_-]{1,64})$/.exec(form.token);
        if (!pair) throw validationError('Choose the token and chain to pay in');
        const payout = await issuePayout(d.deps, actorOf(who), {
          amount: form.amount,
          currency: pair[1],
          chainId: pair[2],
          reason: form.reason,
          ...(form.destination === '' && form.confirmation === '' ? {} : { destination: form.destination, destinationConfirmation: form.confirmation }),
        });
        await sendRefundPage(
          d,
          res,
          who,
          payout.id,
          notice(payout.status === 'claimed' ? 'Payout created: approve it, then pay it from your wallet.' : 'Payout created: send the claim link to the recipient.'),
          201,
        );
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500 || err.status === 401 || err.status === 403) throw err;
        await sendPayoutsPage(d, req, res, who, notice(err.message, 'error'), err.status, form);
      }
    }),
  );
}

async function sendPayoutsPage(d: Dashboard, req: Request, res: Response, who: SignedIn, top: Html | null = null, status = 200, sent?: PayoutForm): Promise<void> {
  const { deps } = d;
  const lang = langOf(res);
  const statusParam = typeof req.query.status === 'string' ? req.query.status : '';
  const wanted = (REFUND_STATUSES as readonly string[]).includes(statusParam) ? (statusParam as RefundStatus) : undefined;
  const pageNo = pageNumber(req);
  const { items, total } = await listRefunds(deps.db, who.caller.organizationId, { page: pageNo, limit: PAGE_SIZE, sortBy: 'createdAt', sortOrder: 'desc', kind: 'payout', status: wanted });
  const views = items.map((r) => presentRefund(deps, r));
  const filter = html`<form method="get" action="/dashboard/payouts" class="row filters"><div><label for="f-status">Status</label><select id="f-status" name="status"><option value="">any</option>${REFUND_STATUSES.filter((s) => s !== 'requested').map(
    (s) => html`<option value="${s}"${s === wanted ? html` selected` : null}>${s}</option>`,
  )}</select></div><div><button type="submit">${chromeText(lang, 'Filter')}</button></div></form>`;
  const table = html`<table class="payouts"><thead><tr><th>Payout</th><th>Status</th><th>Amount</th><th>Reason</th><th>Destination</th><th>Created</th><th>Expires</th></tr></thead><tbody>
${views.map(
  (r) => html`<tr data-payout-id="${r.id}"><td><a href="/dashboard/refunds/${r.id}" class="mono">${r.id}</a></td><td>${statusBadge(r.status)}</td><td class="num">${r.amount} ${r.currency} · ${chainLabel(deps.registry, r.chainId)}</td>
<td>${r.reason}</td><td class="mono">${r.destination ?? '—'}</td><td>${formatDate(r.createdAt)}</td><td>${formatDate(r.expiresAt)}</td></tr>`,
)}
</tbody></table>${views.length === 0 ? html`<p>None.</p>` : null}`;
  const form = roleAtLeast(who.session.role, 'admin') ? newPayoutForm(d, who, lang, sent) : null;
  await sendPage(
    d,
    res,
    who,
    '/dashboard/payouts',
    chromeText(lang, 'Payouts'),
    html`${top}${form}<section class="panel">${filter}${table}${pager('/dashboard/payouts', { status: wanted }, pageNo, PAGE_SIZE, total, lang)}<p>Approved payouts are in the <a href="/dashboard/refunds/export?format=safe">Safe batch (JSON)</a> and the <a href="/dashboard/refunds/export?format=csv">CSV</a> with the approved refunds.</p></section>`,
    status,
  );
}

/** "New payout" (Admin, Owner): amount, token and chain, reason, and the destination if known (typed twice), else a claim link. */
function newPayoutForm(d: Dashboard, who: SignedIn, lang: ReturnType<typeof langOf>, sent?: PayoutForm): Html {
  const pairs = d.deps.registry
    .list()
    .filter((c) => c.enabled)
    .flatMap((c) => d.deps.registry.offeredTokens(c).map((t) => ({ value: `${t.currency}@${c.chainId}`, label: `${t.currency} on ${chainLabel(d.deps.registry, c.chainId)}` })));
  return html`<section class="panel" aria-labelledby="new-payout-h"><h2 id="new-payout-h">${chromeText(lang, 'New payout')}</h2>
<form method="post" action="/dashboard/payouts" class="new-payout">${csrfField(who.session)}
<div class="row">
<div><label for="payout-amount">Amount</label><input id="payout-amount" name="amount" type="text" inputmode="decimal" required value="${sent?.amount ?? ''}"></div>
<div><label for="payout-token">Token and chain</label><select id="payout-token" name="token">${pairs.map((p) => html`<option value="${p.value}"${p.value === sent?.token ? html` selected` : null}>${p.label}</option>`)}</select></div>
<div class="grow"><label for="payout-reason">Reason</label><input id="payout-reason" name="reason" type="text" required maxlength="${REASON_MAX_LENGTH}" placeholder="e.g. affiliate March" value="${sent?.reason ?? ''}"></div>
</div>
<div class="row">
<div class="grow"><label for="payout-destination">Destination (optional)</label><input id="payout-destination" name="destination" type="text" class="mono" autocomplete="off" spellcheck="false" value="${sent?.destination ?? ''}" aria-describedby="payout-destination-hint"><span class="hint" id="payout-destination-hint">Empty: the payout gets a claim link for the recipient to give their address.</span></div>
<div class="grow"><label for="payout-confirmation">Destination again</label><input id="payout-confirmation" name="confirmation" type="text" class="mono" autocomplete="off" spellcheck="false" value="${sent?.confirmation ?? ''}"></div>
</div>
<div><button type="submit" class="primary">${chromeText(lang, 'New payout')}</button></div>
</form></section>`;
}
