import type { Express, Request, Response } from 'express';
import {
  amountsCollected,
  archivePaymentLink,
  createPaymentLink,
  LINK_LIMITS,
  LINK_STATUSES,
  listPaymentLinks,
  publishPaymentLink,
  type CurrencyChoice,
  type LinkInput,
  type LinkStatus,
  type PaymentLinkRow,
} from '../../../core/payment-links/links';
import { presentPaymentLink, type PaymentLinkView } from '../../../core/views/payment-link';
import { roleAtLeast } from '../../../core/organizations/roles';
import { validationError } from '../../../core/platform/errors';
import { chromeText, langOf } from './chrome-text';
import { html, type Html } from '../html';
import { csrfField, formatDate, notice, pager, postButton } from './layout';
import { action, field, page, sendPage, type Dashboard, type SignedIn } from './web';
import { pageNumber } from './settings-pages';

const PAGE_SIZE = 50;

function statusBadge(status: LinkStatus): Html {
  const cls = status === 'active' ? 'ok' : status === 'archived' || status === 'expired' ? 'bad' : 'warn';
  return html`<span class="badge ${cls}" data-status="${status}">${status.replace('_', ' ')}</span>`;
}

/** A form's whole number, or null when left empty. */
function optionalInteger(name: string, text: string): number | null {
  if (text.trim() === '') return null;
  if (!/^\d{1,9}$/.test(text.trim())) throw validationError(`${name} must be a whole number`);
  return Number(text.trim());
}

/**
 * Payment links (issue 29, "list, create, publish, archive, counters"): everyone reads them with
 * their counters; Members and above create, publish and archive, as with the API's key roles.
 * Each action is the API route's domain operation (core/payment-links/links.ts).
 */
export function mountPaymentLinkPages(app: Express, d: Dashboard): void {
  const { deps } = d;

  const present = async (organizationId: string, links: PaymentLinkRow[]): Promise<PaymentLinkView[]> => {
    const collected = await amountsCollected(deps.db, organizationId, links.map((l) => l.id));
    return links.map((l) => presentPaymentLink(deps, l, collected));
  };

  const linksPage = async (req: Request, res: Response, who: SignedIn, top: Html | null = null, status = 200) => {
    const pageNo = pageNumber(req);
    const search = typeof req.query.q === 'string' && req.query.q.trim() ? req.query.q.trim().slice(0, 200) : undefined;
    const wanted = typeof req.query.status === 'string' && (LINK_STATUSES as readonly string[]).includes(req.query.status) ? (req.query.status as LinkStatus) : undefined;
    const { items, total } = await listPaymentLinks(deps, who.caller.organizationId, { page: pageNo, limit: PAGE_SIZE, sortBy: 'createdAt', sortOrder: 'desc', status: wanted, search });
    const links = await present(who.caller.organizationId, items);
    const member = roleAtLeast(who.session.role, 'member');
    const csrf = csrfField(who.session);
    const pairs = deps.registry
      .list()
      .filter((c) => c.enabled)
      .flatMap((c) => deps.registry.offeredTokens(c).map((t) => ({ chainId: c.chainId, currency: t.currency })));
    const button = (id: string, verb: 'publish' | 'archive', label: string, cls: string) => html`${postButton(`/dashboard/payment-links/${id}/${verb}`, who.session, label, cls, langOf(res))} `;
    await sendPage(
      d,
      res,
      who,
      '/dashboard/payment-links',
      'Payment links',
      html`${top}
${member
  ? html`<section class="panel" aria-labelledby="new-link"><h2 id="new-link">${chromeText(langOf(res), 'Create a payment link')}</h2>
<form method="post" action="/dashboard/payment-links">${csrf}
<div class="row"><div><label for="pl-title">Title</label><input id="pl-title" name="title" type="text" maxlength="${LINK_LIMITS.titleMax}" required></div>
<div><label for="pl-amount">Amount (0: the payer chooses)</label><input id="pl-amount" name="amount" type="text" inputmode="decimal" maxlength="80" required></div>
<div><label for="pl-inventory">Units for sale (optional)</label><input id="pl-inventory" name="inventoryTotal" type="text" inputmode="numeric" maxlength="9"></div>
<div><label for="pl-slug">Slug (optional)</label><input id="pl-slug" name="slug" type="text" maxlength="64" pattern="[A-Za-z0-9_\\-]{3,64}"></div></div>
<label for="pl-description">Description (optional)</label><textarea id="pl-description" name="description" rows="2" maxlength="${LINK_LIMITS.descriptionMax}"></textarea>
<p><label style="font-weight:normal"><input type="checkbox" id="pl-usd" name="priceCurrency" value="USD"> Priced in USD: the amount is in dollars (at most 2 decimals) and the payer picks one of the checked USD stablecoins as the route on the payment page</label></p>
<fieldset><legend>Currencies offered</legend>${pairs.map(
      (p, i) => html`<label style="font-weight:normal"><input type="checkbox" name="currencies" value="${p.currency}@${p.chainId}"${i === 0 ? html` checked` : null}> ${p.currency} on ${p.chainId}</label>`,
    )}</fieldset>
<p><button type="submit">${chromeText(langOf(res), 'Create link')}</button> <span class="muted">A new link is a draft: publish it to open its checkout page.</span></p></form></section>`
  : null}
<form method="get" action="/dashboard/payment-links" class="panel row" role="search">
<div><label for="pl-q">Search</label><input id="pl-q" name="q" type="text" value="${search ?? ''}" placeholder="title or slug"></div>
<div><label for="pl-status">Status</label><select id="pl-status" name="status"><option value="">all</option>${LINK_STATUSES.map((s) => html`<option${wanted === s ? html` selected` : null}>${s}</option>`)}</select></div>
<div><button type="submit">${chromeText(langOf(res), 'Filter')}</button></div></form>
<section class="panel"><table id="payment-links"><caption class="skip">Payment links</caption><thead><tr><th>Title</th><th>Price</th><th>Status</th><th>Orders</th><th>Collected</th><th>Units left</th><th>Created</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
${links.map(
  (l) => html`<tr data-link-id="${l.id}"><td>${l.title}<br><a class="mono" href="${l.checkoutUrl}" rel="noopener noreferrer">${l.checkoutUrl}</a></td>
<td class="num">${l.amount === '0' ? html`payer chooses${l.minAmount ? ` from ${l.minAmount}` : ''}${l.maxAmount ? ` up to ${l.maxAmount}` : ''}` : l.amount} ${l.priceCurrency ? `${l.priceCurrency} by ` : ''}${l.currencies.map((c) => `${c.currency}/${c.chainId}`).join(', ')}</td>
<td>${statusBadge(l.status)}</td>
<td class="num counters"><span data-counter="created">${l.counters.ordersCreated}</span> made · <span data-counter="completed">${l.counters.ordersCompleted}</span> paid · <span data-counter="open">${l.counters.openOrders}</span> open</td>
<td class="num">${l.counters.amountCollected.length ? l.counters.amountCollected.map((c) => html`<div>${c.amount} ${c.currency}${c.chainId ? ` (${c.chainId})` : ''}</div>`) : '—'}</td>
<td class="num">${l.counters.inventory.left === null ? '∞' : `${l.counters.inventory.left} of ${l.counters.inventory.total}`}</td>
<td>${formatDate(l.createdAt)}</td>
<td>${member ? html`${l.status === 'draft' ? button(l.id, 'publish', 'Publish', 'secondary') : null}${l.status !== 'archived' ? button(l.id, 'archive', 'Archive', 'danger') : null}` : null}</td></tr>`,
)}
</tbody></table>${links.length === 0 ? html`<p>No payment links match.</p>` : null}${pager('/dashboard/payment-links', { q: search, status: wanted }, pageNo, PAGE_SIZE, total, langOf(res))}</section>`,
      status,
    );
  };

  app.get('/dashboard/payment-links', page(d, 'viewer', (req, res, who) => linksPage(req, res, who)));

  app.post(
    '/dashboard/payment-links',
    action(d, 'member', async (req, res, who) => {
      const body = req.body as Record<string, unknown>;
      // Each checked box is CURRENCY@chain; anything else is a tampered form, refused rather than dropped.
      const currencies: CurrencyChoice[] = (Array.isArray(body.currencies) ? body.currencies : body.currencies === undefined ? [] : [body.currencies]).map((v: unknown) => {
        if (typeof v !== 'string' || !/^[A-Za-z]{1,16}@[A-Za-z0-9_-]{1,64}$/.test(v)) throw validationError('Each currency offered must be one of the listed currency and chain pairs');
        const [currency, chainId] = v.split('@');
        return { currency, chainId };
      });
      const description = field(req, 'description').trim();
      const slug = field(req, 'slug').trim();
      const input: LinkInput = {
        title: field(req, 'title').trim(),
        amount: field(req, 'amount').trim(),
        currencies,
        priceCurrency: field(req, 'priceCurrency') === 'USD' ? 'USD' : null,
        description: description || null,
        inventoryTotal: optionalInteger('Units for sale', field(req, 'inventoryTotal')),
        ...(slug ? { slug } : {}),
      };
      const [created] = await present(who.caller.organizationId, [await createPaymentLink(deps, who.caller.organizationId, input)]);
      await who.audit('payment_link.created', created.id, { title: created.title, amount: created.amount });
      await linksPage(req, res, who, notice(`Payment link “${created.title}” created as a draft.`), 201);
    }),
  );

  for (const verb of ['publish', 'archive'] as const) {
    app.post(
      `/dashboard/payment-links/:id/${verb}`,
      action(d, 'member', async (req, res, who) => {
        const id = String(req.params.id);
        const link = verb === 'publish' ? await publishPaymentLink(deps, who.caller.organizationId, id) : await archivePaymentLink(deps, who.caller.organizationId, id);
        await who.audit(`payment_link.${verb === 'publish' ? 'published' : 'archived'}`, link.id, { title: link.title });
        await linksPage(req, res, who, notice(`Payment link “${link.title}” ${verb === 'publish' ? 'published' : 'archived'}.`));
      }),
    );
  }
}
