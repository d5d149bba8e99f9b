import type { LinkStatus, PaymentLinkRow } from '../../../core/payment-links/links';
import { PAYER_CHOOSES } from '../../../core/payment-links/links';
import { html } from '../html';
import type { Language, Messages } from '../i18n';
import { layout, messagePage, supportLine } from '../layout';
import { qrSvg } from '../qr';
import type { CheckoutMessages } from './checkout-i18n';

export interface CheckoutPageInput {
  link: PaymentLinkRow;
  status: LinkStatus;
  organizationName: string;
  /** The organization's support contact, shown to the payer; null: none. */
  supportContact: string | null;
  checkoutUrl: string;
  /** The page's own path (language links) and the form's target. */
  path: string;
  /** A chain's display name. */
  chainName: (chainId: string) => string;
  /** A link priced in USD: the routes its orders offer (the payer picks one on the payment page); null for a token link. */
  usdRoutes: { currency: string; chainId: string }[] | null;
  /** The visitor's open order of this link (their cookie), if any. */
  openOrderUrl: string | null;
  /** A problem with what the payer sent (the form is shown again with it). */
  problem?: string;
  /** What the payer sent, to keep it in the form. */
  sent?: { choice?: string; amount?: string };
}

export interface PageText {
  lang: Language;
  t: Messages;
  c: CheckoutMessages;
}

/** The value of a choice's radio button: `<currency>@<chainId>`. */
export const choiceValue = (c: { currency: string; chainId: string }) => `${c.currency}@${c.chainId}`;

/**
 * The checkout page (server-rendered, no script needed): the link's title, description and price
 * (or an amount field within its bounds), the token/network choices as radio buttons and a
 * plain form post; sold out says so; a returning visitor is offered their open payment. The QR
 * encodes the checkout URL (for printing). A link priced in USD shows its price in USD and the
 * routes it offers as text, without radio buttons: its payer picks the route on the payment page.
 */
export async function renderCheckoutPage(p: CheckoutPageInput, o: PageText): Promise<string> {
  const { link, c } = { link: p.link, c: o.c };
  const payerChooses = link.amount === PAYER_CHOOSES;
  const usd = p.usdRoutes;
  const left = link.inventoryTotal === null ? null : Math.max(0, link.inventoryTotal - link.inventoryReserved - link.inventorySold);
  const selected = p.sent?.choice ?? choiceValue(link.currencies[0]);
  const routesText = usd ? c.payWithRoutes(usd.map((r) => c.tokenOnNetwork(r.currency, p.chainName(r.chainId)))) : null;
  const form =
    p.status === 'active'
      ? html`
<form method="post" action="${p.path}/orders?lang=${o.lang}" id="checkout-form" novalidate>
  ${usd
    ? null
    : html`<fieldset class="choices">
    <legend>${c.chooseLegend}</legend>
    ${link.currencies.map((choice, i) => {
      const value = choiceValue(choice);
      return html`<label class="choice" for="choice-${i}"><input type="radio" id="choice-${i}" name="choice" value="${value}"${value === selected ? html` checked` : null}> ${c.tokenOnNetwork(choice.currency, p.chainName(choice.chainId))}</label>`;
    })}
  </fieldset>`}
  ${payerChooses
    ? html`<p class="field"><label for="amount">${usd ? c.amountLabelUsd : c.amountLabel}</label>
  <input id="amount" name="amount" type="text" inputmode="decimal" autocomplete="off" required aria-describedby="amount-hint${p.problem ? ' form-problem' : ''}" value="${p.sent?.amount ?? ''}"${p.problem ? html` aria-invalid="true"` : null}>
  <span class="hint" id="amount-hint">${c.amountHint(link.minAmount, link.maxAmount)}</span></p>`
    : null}
  <p><button type="submit" class="button primary" id="pay-button">${c.pay}</button></p>
</form>`
      : null;
  const body = html`<main id="checkout" class="card" data-status="${p.status}">
<p class="merchant">${c.sellerLabel(p.organizationName)}</p>
<h1 id="title">${link.title}</h1>
${link.description ? html`<p class="description">${link.description}</p>` : null}
<dl class="facts">
  <div class="fact"><dt>${c.priceLabel}</dt><dd><span class="value amount" id="price">${payerChooses ? c.payerChooses : `${link.amount} ${usd ? 'USD' : [...new Set(link.currencies.map((x) => x.currency))].join(' / ')}`}</span></dd></div>
</dl>
${routesText ? html`<p class="routes" id="routes">${routesText}</p>` : null}
${left !== null && p.status === 'active' ? html`<p class="hint" id="left">${c.leftText(left)}</p>` : null}
${p.openOrderUrl
  ? html`<div class="status" role="status" id="open-order"><h2>${c.openOrderTitle}</h2><p>${c.openOrderText}</p><p><a class="button primary" id="open-order-link" href="${p.openOrderUrl}">${c.openOrderLink}</a></p></div>`
  : null}
${p.problem ? html`<div class="status status-expired" role="alert" id="form-problem"><p>${c.errorSummary} ${p.problem}</p></div>` : null}
${p.status === 'sold_out' ? html`<div class="status status-grace" role="status" id="sold-out"><h2>${c.soldOutTitle}</h2><p>${c.soldOutText}</p></div>` : null}
${p.status === 'active' && !p.openOrderUrl ? html`<p>${usd ? c.usdPrompt : c.choosePrompt}</p>` : null}
${form}
<figure class="qr">
  <div class="qr-code" id="qr" role="img" aria-label="${c.qrLabel}" data-uri="${p.checkoutUrl}">${await qrSvg(p.checkoutUrl)}</div>
  <figcaption>${c.qrHint}</figcaption>
</figure>
${supportLine(p.supportContact, o.t)}
</main>`;
  return layout({ lang: o.lang, t: o.t, title: `${link.title} · ${c.pageTitle}`, body, path: p.path }).text;
}

/** A checkout message page (gone, busy, cross-site, too many). */
export function checkoutMessagePage(o: PageText, kind: 'gone' | 'busy' | 'crossSite' | 'tooMany' | 'soldOut'): string {
  const [title, text] = {
    gone: [o.c.goneTitle, o.c.goneText],
    busy: [o.c.busyTitle, o.c.busyText],
    crossSite: [o.c.crossSiteTitle, o.c.crossSiteText],
    tooMany: [o.c.tooManyTitle, o.c.tooManyText],
    soldOut: [o.c.soldOutTitle, o.c.soldOutText],
  }[kind];
  return messagePage(o.lang, o.t, title, text);
}

