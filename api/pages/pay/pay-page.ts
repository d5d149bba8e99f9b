import type { PaymentPageView } from '../../../core/orders/payment-page-view';
import { html, type Html } from '../html';
import type { Language, Messages } from '../i18n';
import { layout, supportLine } from '../layout';
import { qrSvg } from '../qr';
import { isFinalState, type PaymentStatusJson } from './pay-status';

/** Without JavaScript the page reloads itself this often while the order can still change. */
export const NO_SCRIPT_REFRESH_SECONDS = 10;

function copyButton(value: string, label: string, t: Messages): Html {
  // Shown by pay.js (copying needs script); a native button, so keyboard and screen readers work.
  return html`<button type="button" class="copy" data-copy="${value}" aria-label="${label}" data-copied="${t.copied}" hidden>${t.copy}</button>`;
}

function formatLeft(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

function statusText(v: PaymentPageView, t: Messages): { heading: string; text: string } {
  const money = (x: string) => `${x} ${v.currency}`;
  switch (v.state) {
    case 'choosing':
      return { heading: t.headings.choosing, text: t.choosing };
    case 'awaiting':
      return { heading: t.headings.awaiting, text: t.awaiting };
    case 'underpaid':
      return { heading: t.headings.underpaid, text: t.underpaid(money(v.amountReceived), money(v.remaining)) };
    case 'confirming':
      return {
        heading: t.headings.confirming,
        text: v.finality === 'solidified' || !v.confirmations ? t.solidifying : t.confirming(v.confirmations.current, v.confirmations.required),
      };
    case 'grace':
      return { heading: t.headings.grace, text: v.detectionDelayed && v.chainName ? t.graceDelayed(v.chainName) : t.grace };
    case 'paid':
      return v.excess !== '0'
        ? { heading: t.headings.overpaid, text: `${t.paid} ${t.overpaid(money(v.excess))}` }
        : { heading: t.headings.paid, text: t.paid };
    case 'expired':
      if (v.underReview) return { heading: t.headings.reviewing, text: t.reviewing };
      return { heading: t.headings.expired, text: v.amountReceived !== '0' ? t.expiredPartial(money(v.amountReceived)) : t.expired };
  }
}

/** Amount, network warning, address, QR and wallet link: only while the page invites payment. */
async function paymentInstructions(v: PaymentPageView, t: Messages): Promise<Html> {
  const partial = v.state === 'underpaid';
  const due = `${v.remaining} ${v.currency}`;
  const address = v.address ?? '';
  const chainName = v.chainName ?? '';
  return html`
${otherRoutePayments(v, t)}
<dl class="facts">
  ${priceFact(v, t)}
  ${partial ? html`<div class="fact"><dt>${t.receivedLabel}</dt><dd>${v.amountReceived} ${v.currency}</dd></div>` : null}
  <div class="fact"><dt id="amount-label">${partial ? t.remainderLabel : t.amountLabel}</dt>
    <dd><span class="value amount" id="amount" aria-labelledby="amount-label">${due}</span> ${copyButton(v.remaining, t.copyAmount, t)}</dd></div>
  <div class="fact"><dt>${t.networkLabel}</dt><dd>${t.tokenOnNetwork(v.currency, chainName)}</dd></div>
  <div class="fact"><dt id="address-label">${t.addressLabel}</dt>
    <dd><code class="value address" id="address" aria-labelledby="address-label">${address}</code> ${copyButton(address, t.copyAddress, t)}</dd></div>
</dl>
<p class="warning" role="note"><strong>!</strong> ${t.warning(v.currency, chainName)}</p>
${v.walletUri
  ? html`<figure class="qr">
  <div class="qr-code" id="qr" role="img" aria-label="${t.qrLabel}" data-uri="${v.walletUri}">${await qrSvg(v.walletUri)}</div>
  <figcaption>${t.qrHint}</figcaption>
</figure>
<p class="wallet"><a class="button" id="wallet-link" href="${v.walletUri}">${t.openWallet}</a></p>`
  : null}`;
}

/** A USD order's price in dollars (its amounts are shown in the route's token). */
function priceFact(v: PaymentPageView, t: Messages): Html | null {
  return v.priceUsd === null ? null : html`<div class="fact"><dt>${t.priceLabel}</dt><dd><span class="value" id="price">${v.priceUsd} USD</span></dd></div>`;
}

/** Payments by a route the payer switched away from: they count, and the page says so. */
function otherRoutePayments(v: PaymentPageView, t: Messages): Html | null {
  if (v.otherRoutePayments.length === 0) return null;
  return html`${v.otherRoutePayments.map((p) => html`<p class="note other-route-payment" role="note">${t.otherRoutePayment(`${p.amount} ${p.currency}`, p.chainName)}</p>`)}`;
}

/**
 * A USD order's routes as one plain form (no script needed): a button per token and network, with
 * its amount. Posting it chooses the route (POST /pay/<token>/route), or switches to it.
 */
function routeForm(v: PaymentPageView, t: Messages, path: string): Html | null {
  if (!v.routeChoice) return null;
  return html`<form class="routes" method="post" action="${path}/route">
<fieldset><legend>${t.routeLegend}</legend>
${v.routeChoice.map(
  (r) => html`<button type="submit" name="route" value="${r.value}" class="${r.current ? 'button route current' : 'button route'}" data-route="${r.value}"${r.current ? html` aria-current="true" disabled` : null}>${t.payWithRoute(r.currency, r.chainName, r.amount)}</button>`,
)}
</fieldset>
</form>`;
}

async function stateBody(v: PaymentPageView, t: Messages, path: string): Promise<Html> {
  const now = Date.parse(v.serverTime);
  const countdown = html`<p class="countdown">${t.timeLeft}: <time id="countdown" datetime="${v.expiresAt}" data-expires-at="${v.expiresAt}">${formatLeft(Date.parse(v.expiresAt) - now)}</time></p>`;
  switch (v.state) {
    case 'choosing':
      return html`
${countdown}
<dl class="facts">${priceFact(v, t)}</dl>
${routeForm(v, t, path)}`;
    case 'awaiting':
    case 'underpaid':
      return html`
${countdown}
${await paymentInstructions(v, t)}
${v.routeChoice ? html`<details class="switch-route"><summary>${t.switchRoute}</summary>${routeForm(v, t, path)}</details>` : null}`;
    case 'confirming':
      return html`
<dl class="facts">
  <div class="fact"><dt>${t.receivedLabel}</dt><dd>${v.amountReceived} ${v.currency}</dd></div>
  ${v.confirmations && v.finality === 'confirmations'
    ? html`<div class="fact"><dt id="conf-label">${t.confirmationsLabel}</dt><dd><progress id="confirmations" aria-labelledby="conf-label" max="${v.confirmations.required}" value="${v.confirmations.current}"></progress> <span>${v.confirmations.current} / ${v.confirmations.required}</span></dd></div>`
    : null}
</dl>`;
    case 'grace':
      return html`
<dl class="facts">
  ${v.amountReceived !== '0' ? html`<div class="fact"><dt>${t.receivedLabel}</dt><dd>${v.amountReceived} ${v.currency}</dd></div>` : null}
  <div class="fact"><dt>${t.amountLabel}</dt><dd>${v.amount} ${v.currency}</dd></div>
  ${v.chainName ? html`<div class="fact"><dt>${t.networkLabel}</dt><dd>${t.tokenOnNetwork(v.currency, v.chainName)}</dd></div>` : null}
</dl>`;
    case 'paid':
      return html`
<dl class="facts">
  ${v.excess !== '0' ? html`<div class="fact"><dt>${t.amountLabel}</dt><dd>${v.amount} ${v.currency}</dd></div>` : null}
  <div class="fact"><dt>${t.receivedLabel}</dt><dd>${v.amountReceived} ${v.currency}</dd></div>
  ${v.txHash
    ? html`<div class="fact"><dt>${t.transactionLabel}</dt><dd>${v.explorerUrl
        ? html`<a class="value tx" id="tx-link" href="${v.explorerUrl}" rel="noreferrer noopener">${v.txHash}</a>`
        : html`<code class="value tx" id="tx-hash">${v.txHash}</code>`}</dd></div>`
    : null}
</dl>
${v.redirectUrl ? html`<p><a class="button primary" id="continue" href="${v.redirectUrl}">${t.continueToMerchant}</a></p>` : null}`;
    case 'expired':
      return html`
${v.amountReceived !== '0' ? html`<dl class="facts"><div class="fact"><dt>${t.receivedLabel}</dt><dd>${v.amountReceived} ${v.currency}</dd></div></dl>` : null}
${v.redirectUrl ? html`<p><a class="button" id="return" href="${v.redirectUrl}">${t.returnToMerchant}</a></p>` : null}`;
  }
}

/** While the chain's detection is delayed (the grace text says it itself). */
function delayNotice(v: PaymentPageView, t: Messages): Html | null {
  if (!v.detectionDelayed || v.state === 'grace' || !v.chainName) return null;
  return html`<p class="warning" id="detection-delayed" role="note"><strong>!</strong> ${t.detectionDelayed(v.chainName)}</p>`;
}

export async function renderPayPage(
  v: PaymentPageView,
  status: PaymentStatusJson,
  o: { lang: Language; t: Messages; path: string; statusUrl: string },
): Promise<string> {
  const { heading, text } = statusText(v, o.t);
  const final = isFinalState(v.state);
  const body = html`<main id="pay" class="card" data-state="${v.state}" data-version="${status.version}" data-server-time="${v.serverTime}"
  data-status-url="${o.statusUrl}" data-final="${final ? 'true' : 'false'}">
<p class="merchant">${o.t.paymentTo(v.organizationName)}</p>
<p class="order-reference">${o.t.orderReferenceLabel}: <span class="value" id="order-reference">${v.orderReference}</span></p>
<div id="status" class="status status-${v.state}" role="status" aria-live="polite" aria-atomic="true">
  <h1 id="status-heading">${heading}</h1>
  <p id="status-text">${text}</p>
</div>
<div id="pay-body">${delayNotice(v, o.t)}${await stateBody(v, o.t, o.path)}</div>
${supportLine(v.supportContact, o.t)}
</main>`;
  return layout({
    lang: o.lang,
    t: o.t,
    title: `${heading} · ${o.t.paymentTo(v.organizationName)}`,
    body,
    refreshSeconds: final ? undefined : NO_SCRIPT_REFRESH_SECONDS,
    scripts: ['pay.js'],
    path: o.path,
  }).text;
}
