import { html } from '../html';
import type { Language, Messages } from '../i18n';
import { layout, messagePage, supportLine } from '../layout';
import type { RefundView } from '../../../core/views/refund';
import { claimMessagesFor, type RefundMessages } from './refund-i18n';

export interface RefundPageText {
  lang: Language;
  t: Messages;
  r: RefundMessages;
}

export interface RefundPageInput {
  refund: RefundView;
  organizationName: string;
  supportContact: string | null;
  networkName: string;
  /** The page's own path: the language links and the form's target. */
  path: string;
  /** Claimable now (awaiting its claim and not past expiresAt). */
  claimable: boolean;
  /** A refused address: the sentence, and what the payer typed (kept in the form). */
  problem?: string;
  sent?: { destination?: string; confirmation?: string };
}

/**
 * The refund claim page (server-rendered, no script needed): the amount, token and network, and a
 * plain form where the payer types their address twice; after the claim, what happens next.
 */
export function renderRefundPage(p: RefundPageInput, o: RefundPageText): string {
  const refund = p.refund;
  const r = refund.kind === 'payout' ? claimMessagesFor(o.lang, 'payout') : o.r;
  const describedBy = (hint: string) => (p.problem ? `${hint} form-problem` : hint);
  const form = p.claimable
    ? html`
<form method="post" action="${p.path}?lang=${o.lang}" id="claim-form" novalidate>
  <p class="field"><label for="destination">${r.destinationLabel}</label>
  <input id="destination" name="destination" type="text" autocomplete="off" autocapitalize="off" spellcheck="false" required aria-describedby="${describedBy('destination-hint')}" value="${p.sent?.destination ?? ''}"${p.problem ? html` aria-invalid="true"` : null}>
  <span class="hint" id="destination-hint">${r.destinationHint(refund.protocol)}</span></p>
  <p class="field"><label for="confirmation">${r.confirmationLabel}</label>
  <input id="confirmation" name="confirmation" type="text" autocomplete="off" autocapitalize="off" spellcheck="false" required aria-describedby="${describedBy('confirmation-hint')}" value="${p.sent?.confirmation ?? ''}"${p.problem ? html` aria-invalid="true"` : null}>
  <span class="hint" id="confirmation-hint">${r.confirmationHint}</span></p>
  <p><button type="submit" class="button primary" id="claim-button">${r.submit}</button></p>
</form>
<p class="hint" id="expires">${r.expiresText(new Date(refund.expiresAt).toUTCString())}</p>`
    : null;
  const done =
    refund.status === 'claimed'
      ? [r.claimedTitle, r.claimedText(refund.destination ?? '')]
      : refund.status === 'approved'
        ? [r.approvedTitle, r.approvedText(refund.destination ?? '')]
        : refund.status === 'completed'
          ? [r.completedTitle, r.completedText(refund.destination ?? '')]
          : null;
  const body = html`<main id="refund" class="card" data-status="${refund.status}">
<p class="merchant">${r.fromLabel(p.organizationName)}</p>
<h1 id="title">${r.pageTitle}</h1>
<dl class="facts">
  <div class="fact"><dt>${r.amountLabel}</dt><dd><span class="value amount" id="amount">${refund.amount} ${refund.currency}</span></dd></div>
  <div class="fact"><dt>${r.networkLabel}</dt><dd><span class="value" id="network">${r.tokenOnNetwork(refund.currency, p.networkName)}</span></dd></div>
  <div class="fact"><dt>${r.tokenContractLabel}</dt><dd><code class="value address" id="token-contract">${refund.tokenAddress}</code></dd></div>
</dl>
${done ? html`<div class="status status-completed" role="status" aria-live="polite" id="claim-status"><h2>${done[0]}</h2><p>${done[1]}</p></div>` : null}
${p.claimable ? html`<p id="intro">${r.intro}</p>` : null}
${p.problem ? html`<div class="status status-expired" role="alert" id="form-problem"><p>${r.errorSummary} ${p.problem}</p></div>` : null}
${form}
${supportLine(p.supportContact, o.t)}
</main>`;
  return layout({ lang: o.lang, t: o.t, title: `${r.pageTitle} · ${p.organizationName}`, body, path: p.path }).text;
}

export function refundMessagePage(o: RefundPageText, kind: 'gone' | 'crossSite' | 'tooMany' | 'busy'): string {
  const [title, text] = {
    gone: [o.r.goneTitle, o.r.goneText],
    crossSite: [o.r.crossSiteTitle, o.r.crossSiteText],
    tooMany: [o.r.tooManyTitle, o.r.tooManyText],
    busy: [o.r.busyTitle, o.r.busyText],
  }[kind];
  return messagePage(o.lang, o.t, title, text);
}
