import type { Request } from 'express';
import { html, type Html } from '../html';
import type { Session } from '../../../core/users/sessions';
import type { Language } from '../i18n';
import type { UnattributedReason } from '../../../core/transfers/transfers';
import type { OrderException, OrderView } from '../../../core/views/order';
import type { TransferView } from '../../../core/views/transfer';
import { REASON_MAX_LENGTH, type Actor } from '../../../core/reconciliation/actor';
import { attributionTargetOf, type AttributionTarget } from '../../../core/reconciliation/attribute-transfer';
import { validationError } from '../../../core/platform/errors';
import { chromeText } from './chrome-text';
import { csrfField, formatDate } from './layout';
import { field, type SignedIn } from './web';

/**
 * The pieces of the dashboard's reconciliation (issue 40) shared by the "Needs attention" view,
 * the transfer page and the order page: the words for why a payment was not credited and for an
 * order's exceptions, and the attribute and settle forms (plain form posts, no script).
 */

/** Why a transfer was left unattributed, as a merchant reads it. */
export const UNATTRIBUTED_REASON_WORDS: Record<UnattributedReason, string> = {
  no_holder: 'arrived while no order or deposit held the address',
  undecidable: 'arrived while the address changed hands; the service could not tell for whom',
  paid_late: "arrived after its order's grace, within the late-payment window",
};

/** Why a transfer was not credited, in words; null for one that counts (or was attributed by hand). */
export function uncreditedWhy(t: Pick<TransferView, 'unattributedReason' | 'orderId' | 'depositReference' | 'counted' | 'attributedBy'>): string | null {
  if (t.unattributedReason) return UNATTRIBUTED_REASON_WORDS[t.unattributedReason];
  // Recorded against its order without counting: mined after the grace, or in another token or chain.
  if (t.orderId && !t.counted && !t.attributedBy) return 'recorded against the order without counting (after its grace, or another token or chain)';
  return null;
}

export const EXCEPTION_WORDS: Record<OrderException, string> = {
  underpaid: 'completed short of its amount (within the underpayment tolerance, or by hand)',
  overpaid: 'received more than its amount',
  paidLate: 'a payment reached its address after its grace',
  unattributedPayments: 'payments to its address wait for a decision',
  manual: "completed by a merchant's decision",
};

export const EXCEPTION_LABELS: Record<OrderException, string> = {
  underpaid: 'Underpaid',
  overpaid: 'Overpaid',
  paidLate: 'Paid late',
  unattributedPayments: 'Payments to decide',
  manual: 'Settled by hand',
};

/** The signed-in user as the reconciliation actions record them: by e-mail, from their IP. */
export function actorOf(who: SignedIn): Actor {
  return { organizationId: who.session.organizationId, userId: who.session.userId, name: who.session.email, ip: who.ip };
}

/**
 * The attribute form's target: a candidate's radio (`order:<id>` or `deposit:<reference>`), or
 * `other` with the typed order id or deposit reference (exactly one, as the API body gives them).
 */
export function attributionTargetFromForm(req: Request): AttributionTarget {
  const chosen = field(req, 'target');
  if (chosen.startsWith('order:')) return attributionTargetOf({ orderId: chosen.slice('order:'.length) });
  if (chosen.startsWith('deposit:')) return attributionTargetOf({ depositReference: chosen.slice('deposit:'.length) });
  return attributionTargetOf({ orderId: field(req, 'orderId'), depositReference: field(req, 'depositReference') });
}

/** The form's reason, bounded as the API's request schema bounds it (the domain operation refuses an empty one). */
export function reasonFromForm(req: Request): string {
  const reason = field(req, 'reason');
  if (reason.length > REASON_MAX_LENGTH) throw validationError(`The reason is longer than ${REASON_MAX_LENGTH} characters`, [{ field: 'reason', message: `at most ${REASON_MAX_LENGTH} characters` }]);
  return reason;
}

function reasonInput(id: string): Html {
  return html`<label for="${id}">Reason</label><input id="${id}" name="reason" type="text" required maxlength="${REASON_MAX_LENGTH}" placeholder="why, in your words (kept in the audit log)">`;
}

/**
 * The full attribute form of a transfer page: the evidence's candidates as choices (the first
 * one pre-selected), another order id or deposit reference, and the reason.
 */
export function attributeForm(t: TransferView, session: Session, lang: Language): Html {
  const choices = t.candidates.flatMap((c) =>
    c.orderId ? [{ value: `order:${c.orderId}`, text: html`order <span class="mono">${c.orderId}</span> (${c.relation})` }] : c.depositReference ? [{ value: `deposit:${c.depositReference}`, text: html`deposit reference ${c.depositReference} (${c.relation})` }] : [],
  );
  return html`<form method="post" action="/dashboard/transfers/${t.id}/attribute" class="attribute">${csrfField(session)}
<fieldset><legend>Attribute to</legend>
${choices.map((c, i) => html`<label class="choice"><input type="radio" name="target" value="${c.value}"${i === 0 ? html` checked` : null}> ${c.text}</label>`)}
<label class="choice"><input type="radio" name="target" value="other"${choices.length === 0 ? html` checked` : null}> another order or deposit reference:</label>
<div class="row"><div><label for="attr-order">Order id</label><input id="attr-order" name="orderId" type="text" maxlength="64" placeholder="ord_…"></div>
<div><label for="attr-ref">or deposit reference</label><input id="attr-ref" name="depositReference" type="text" maxlength="255"></div></div>
</fieldset>
${reasonInput('attr-reason')}
<p><button type="submit">${chromeText(lang, 'Attribute')}</button></p></form>`;
}

/** A row's "Attribute to this order" form on the order page: the order fixed, a reason asked. */
export function attributeToOrderForm(transferId: string, orderId: string, session: Session, lang: Language): Html {
  return html`<form method="post" action="/dashboard/transfers/${transferId}/attribute" class="row attribute-here">${csrfField(session)}
<input type="hidden" name="target" value="order:${orderId}"><input type="hidden" name="returnTo" value="order">
<div>${reasonInput(`reason-${transferId}`)}</div><div><button type="submit">${chromeText(lang, 'Attribute to this order')}</button></div></form>`;
}

/** The order page's "Settle by hand" form (a pending or expired order). */
export function settleForm(orderId: string, session: Session, lang: Language): Html {
  return html`<form method="post" action="/dashboard/orders/${orderId}/resolve" class="row settle">${csrfField(session)}
<input type="hidden" name="status" value="completed">
<div class="grow">${reasonInput('settle-reason')}</div><div><button type="submit">${chromeText(lang, 'Settle by hand')}</button></div></form>`;
}

/** An order's exceptions and its resolution (who, when, why), for its page's facts. */
export function exceptionFacts(o: OrderView): Html {
  return html`<dt>Exceptions</dt><dd>${o.exceptions.length === 0 ? 'none' : html`<ul class="exceptions">${o.exceptions.map((e) => html`<li><span class="badge warn">${EXCEPTION_LABELS[e]}</span> ${EXCEPTION_WORDS[e]}</li>`)}</ul>`}</dd>
${o.resolution ? html`<dt>Resolution</dt><dd>${o.resolution === 'manual' ? html`by hand: ${o.resolvedBy}, ${formatDate(o.resolvedAt)}: “${o.resolutionReason}”` : 'automatic (by its payments)'}</dd>` : null}
${o.lateWindowEndsAt ? html`<dt>Late payments watched until</dt><dd>${formatDate(o.lateWindowEndsAt)}</dd>` : null}`;
}
