import type postgres from 'postgres';
import type { ChainHistory } from './chain-history';
import { paymentKey } from './intent';
import { CANONICAL_FINAL_STATUS, CONFIRMED_STATUSES, statusAllowedWhenOrphaned, transferIdentity } from './rules';
import type { RefundBehaviour } from './scenario';

/**
 * The refund oracle (issue 42): the simulation knows what it did with each refund — when the
 * merchant approved it (the approve call's answer), what it paid, where and when it sent each
 * payment — independently of the service's rule. It judges every refund by that:
 *   - completed ⇒ payments of its token to its claimed destination, each sent after the approval
 *     answered, whose confirmed records add up to its amount; its txHash is one of them;
 *   - a payment sent before the approval, or to another address, never counts toward it (one
 *     counted is a violation, unless a reorg on its chain re-mined it after the approval: counted
 *     apart);
 *   - liveness: a refund whose payments after approval to its destination are on the final chain
 *     and add up to its amount ends completed — unless the service's evidence cannot tell the
 *     payment was mined after the approval (a stall, workers down: no look at the head in between;
 *     the rule of core/detection/attribution.ts minedAfterTime, re-read here from the stored
 *     evidence), counted apart as undecidable;
 *   - no refund payment is an incoming payment: every transfer recorded with a refund, and every
 *     transfer into a destination or a wrong address the merchant paid, is attributed to no order
 *     and no deposit reference (the intent oracle separately fails any of the merchant's payments
 *     credited to anything);
 *   - events and the API: one refund.claimed per claimed refund, one refund.completed per
 *     completed one (none otherwise); GET /refunds/:id says what the database says.
 */

export interface RefundPaymentRecord {
  /** The simulation's reference of the payment (trace `tx` entries carry it). */
  ref: string;
  /** 'destination': to the refund's claimed destination; 'wrong': to another address. */
  to: 'destination' | 'wrong';
  address: string;
  amount: bigint;
  /** When the payer's send began (ms). */
  sentAt: number;
  /** null: the chain refused the send (a tx-error). */
  txHash: string | null;
  /** Sent after the approve call answered. */
  afterApproval: boolean;
}

export interface RefundRecord {
  ref: string;
  behaviour: RefundBehaviour;
  chainId: string;
  currency: string;
  orderId: string;
  /** Why the simulation stopped short (the order did not complete, an API refusal…); null: it went through. */
  skipped: string | null;
  refundId: string | null;
  amount: bigint | null;
  destination: string | null;
  claimed: boolean;
  /** When the approve call answered (ms); null: not approved. */
  approvedAnsweredAt: number | null;
  payments: RefundPaymentRecord[];
}

export interface RefundReport {
  planned: number;
  /** Not issued, by why (the order was not created or did not complete; an API refusal). */
  skipped: Record<string, number>;
  issued: number;
  claimed: number;
  approved: number;
  completed: number;
  /** Per behaviour: [refunds approved, of them completed]. */
  outcomes: Partial<Record<RefundBehaviour, [number, number]>>;
  /** Refunds that ought to complete by the simulation's knowledge but did not, in a documented class. */
  apart: Record<string, number>;
  payments: { destination: number; wrong: number; early: number };
  violations: string[];
}

/** Refund kinds that pay the whole amount to the destination after approval (liveness applies). */
const PAID_IN_FULL: readonly RefundBehaviour[] = ['on-time', 'partial-then-rest', 'wrong-then-right', 'early-then-right', 'late'];

export async function judgeRefunds(
  sql: postgres.Sql,
  /** Refunds the scenario planned (some orders are never created, or never complete). */
  planned: number,
  records: readonly RefundRecord[],
  histories: ChainHistory[],
  /** Each chain's L (HEAD_LAG_SECONDS), for reading the stored evidence as the rule does. */
  lagSeconds: ReadonlyMap<string, number>,
  /** Reorgs of the run: chain id and when (ms). */
  reorgs: readonly { chainId: string; at: number }[],
  api: (refundId: string) => Promise<{ status: number; body: Record<string, unknown> }>,
): Promise<RefundReport> {
  const report: RefundReport = { planned, skipped: {}, issued: 0, claimed: 0, approved: 0, completed: 0, outcomes: {}, apart: {}, payments: { destination: 0, wrong: 0, early: 0 }, violations: [] };
  const violation = (v: string) => report.violations.push(`refund: ${v}`);
  const apart = (cls: string) => (report.apart[cls] = (report.apart[cls] ?? 0) + 1);
  const ms = (v: Date | string | null) => (v === null ? null : new Date(v).getTime());

  const refundRows = new Map(
    (
      await sql<{ id: string; status: string; amount: string; amount_paid: string; destination: string | null; approved_at: Date | string | null; tx_hash: string | null; currency: string; chain_id: string }[]>`
        select id, status, amount::text as amount, amount_paid::text as amount_paid, destination, approved_at, tx_hash, currency, chain_id from refunds`
    ).map((r) => [r.id, r]),
  );
  const transferRows = await sql<{ id: string; refund_id: string | null; chain_id: string; tx_hash: string; index_in_tx: number; to_address: string; currency: string; amount: string; status: string; counted: boolean; order_id: string | null; deposit_binding_id: string | null; mined_after: Date | string | null; mined_by: Date | string | null; clock_mined_after: Date | string | null; clock_mined_by: Date | string | null }[]>`
    select id, refund_id, chain_id, tx_hash, index_in_tx, to_address, currency, amount::text as amount, status, counted, order_id, deposit_binding_id, mined_after, mined_by, clock_mined_after, clock_mined_by from transfers`;
  const eventRows = await sql<{ type: string; refund_id: string }[]>`select type, data->>'id' as refund_id from events where type like 'refund.%'`;
  const eventCount = new Map<string, number>();
  for (const e of eventRows) eventCount.set(`${e.type} ${e.refund_id}`, (eventCount.get(`${e.type} ${e.refund_id}`) ?? 0) + 1);

  // The final canonical transfers, by the key the payer knows (intent.ts paymentKey), lower-cased:
  // the histories' identities are (transferIdentity), Solana's base58 signatures included.
  const canonicalKeys = new Set<string>();
  for (const h of histories) {
    for (const t of await h.transfers()) {
      const cut = t.identity.lastIndexOf(':');
      canonicalKeys.add(paymentKey({ chainId: t.chainId, txHash: t.identity.slice(0, cut), indexInTx: Number(t.identity.slice(cut + 1)), to: t.to, currency: t.currency }).toLowerCase());
    }
  }
  const canonical = { has: (key: string) => canonicalKeys.has(key.toLowerCase()) };
  const keyOf = (chainId: string, txHash: string, to: string, currency: string) => paymentKey({ chainId, txHash, indexInTx: 0, to, currency });
  const rowKey = (r: (typeof transferRows)[number]) => paymentKey({ chainId: r.chain_id, txHash: r.tx_hash, indexInTx: r.index_in_tx, to: r.to_address, currency: r.currency });
  const rowsByKey = new Map<string, (typeof transferRows)[number][]>();
  for (const r of transferRows) if (r.status !== 'dropped') rowsByKey.set(rowKey(r), [...(rowsByKey.get(rowKey(r)) ?? []), r]);

  // --- no refund payment is an incoming payment -------------------------------------------------
  for (const r of transferRows) {
    if (r.refund_id !== null && (r.order_id !== null || r.deposit_binding_id !== null)) violation(`transfer ${r.id} pays refund ${r.refund_id} and is attributed to ${r.order_id ? `order ${r.order_id}` : `deposit ${r.deposit_binding_id}`}`);
  }
  const merchantAddresses = new Set<string>();
  for (const rec of records) {
    if (rec.destination) merchantAddresses.add(rec.destination.toLowerCase());
    for (const p of rec.payments) merchantAddresses.add(p.address.toLowerCase());
  }
  for (const r of transferRows) {
    if (merchantAddresses.has(r.to_address.toLowerCase()) && (r.order_id !== null || r.deposit_binding_id !== null)) violation(`transfer ${r.id} into a refund destination ${r.to_address} is credited as an incoming payment`);
  }
  // Every refund payment recorded is on the chain in its final state (or left it and says so).
  for (const r of transferRows) {
    if (r.refund_id === null || r.status === 'dropped') continue;
    const onChain = canonical.has(rowKey(r));
    if (onChain && r.status !== CANONICAL_FINAL_STATUS) violation(`refund payment ${r.id} (${transferIdentity({ txHash: r.tx_hash, indexInTx: r.index_in_tx })}) is ${r.status} at quiescence`);
    if (!onChain && !statusAllowedWhenOrphaned(r.status)) violation(`refund payment ${r.id} is ${r.status} but is not on the chain`);
  }

  /** The rule's reading of the stored evidence: the block is known to have been mined after t (and not seen before it). */
  const provenAfter = (r: (typeof transferRows)[number], t: number) => {
    const lag = (lagSeconds.get(r.chain_id) ?? 0) * 1000;
    const [after, by, clockAfter, clockBy] = [ms(r.mined_after), ms(r.mined_by), ms(r.clock_mined_after), ms(r.clock_mined_by)];
    const notYet = (after !== null && after >= t - lag) || (clockAfter !== null && clockAfter >= t);
    const existed = (by !== null && by <= t) || (clockBy !== null && clockBy <= t);
    return notYet && !existed;
  };

  for (const rec of records) {
    for (const p of rec.payments) {
      if (p.to === 'wrong') report.payments.wrong++;
      else if (!p.afterApproval) report.payments.early++;
      else report.payments.destination++;
    }
    if (rec.skipped !== null && !rec.refundId) report.skipped[rec.skipped] = (report.skipped[rec.skipped] ?? 0) + 1;
    if (!rec.refundId) continue;
    report.issued++;
    const row = refundRows.get(rec.refundId);
    if (!row) {
      violation(`${rec.ref}: refund ${rec.refundId} issued but not in the database`);
      continue;
    }
    const amount = BigInt(row.amount);
    if (rec.amount !== null && rec.amount !== amount) violation(`${rec.refundId}: issued for ${rec.amount}, the database says ${amount}`);
    if (rec.claimed) report.claimed++;
    if (rec.claimed && (row.destination ?? '').toLowerCase() !== (rec.destination ?? '').toLowerCase()) violation(`${rec.refundId}: claimed for ${rec.destination}, the database says ${row.destination}`);
    const approvedAt = ms(row.approved_at);
    if (rec.approvedAnsweredAt !== null) {
      report.approved++;
      const o = (report.outcomes[rec.behaviour] ??= [0, 0]);
      o[0]++;
      if (row.status === 'completed') o[1]++;
    }
    if (row.status === 'completed') report.completed++;

    // Each payment the merchant made toward it, and its record.
    const good = rec.payments.filter((p) => p.to === 'destination' && p.afterApproval && p.txHash !== null);
    const goodKeys = new Set(good.map((p) => keyOf(rec.chainId, p.txHash!, p.address, rec.currency)));
    const mine = transferRows.filter((r) => r.refund_id === rec.refundId && r.status !== 'dropped');
    const reorgedSince = (from: number) => reorgs.some((g) => g.chainId === rec.chainId && g.at >= from);
    for (const r of mine.filter((x) => x.counted && !goodKeys.has(rowKey(x)))) {
      const p = rec.payments.find((x) => x.txHash !== null && keyOf(rec.chainId, x.txHash, x.address, rec.currency) === rowKey(r));
      if (p && !p.afterApproval && reorgedSince(p.sentAt)) {
        apart('a payment before approval re-mined after it by a reorg');
        continue;
      }
      violation(`${rec.refundId} (${rec.behaviour}): transfer ${r.id} (${r.tx_hash}) counts toward it but ${p ? 'was sent before the approval' : 'is no payment the merchant sent after the approval'}`);
    }
    if (row.status === 'completed') {
      const confirmed = mine.filter((r) => r.counted && CONFIRMED_STATUSES.includes(r.status) && goodKeys.has(rowKey(r))).reduce((s, r) => s + BigInt(r.amount), 0n);
      if (confirmed < amount) violation(`${rec.refundId} (${rec.behaviour}) completed with confirmed payments after approval to its destination of ${confirmed} < ${amount}`);
      if (!good.some((p) => p.txHash!.toLowerCase() === (row.tx_hash ?? '').toLowerCase())) violation(`${rec.refundId} (${rec.behaviour}) completed by ${row.tx_hash}, which is no payment sent to its destination after its approval`);
      if (approvedAt === null || rec.approvedAnsweredAt === null) violation(`${rec.refundId} completed without an approval`);
    } else if (rec.approvedAnsweredAt !== null && PAID_IN_FULL.includes(rec.behaviour)) {
      // Liveness: paid in full after approval to the destination, on the final chain.
      const onChain = good.filter((p) => canonical.has(keyOf(rec.chainId, p.txHash!, p.address, rec.currency)));
      const paid = onChain.reduce((s, p) => s + p.amount, 0n);
      const sent = good.reduce((s, p) => s + p.amount, 0n);
      if (sent < amount) apart('not paid in full (a send failed)');
      else if (paid < amount) apart('a payment lost to a reorg');
      else {
        const records = onChain.map((p) => rowsByKey.get(keyOf(rec.chainId, p.txHash!, p.address, rec.currency))?.find((r) => r.refund_id === rec.refundId) ?? null);
        const missing = records.filter((r) => r === null).length;
        const undecided = records.filter((r) => r !== null && !r.counted && approvedAt !== null && !provenAfter(r, approvedAt)).length;
        if (missing > 0) violation(`${rec.refundId} (${rec.behaviour}): ${missing} of its payments after approval to ${rec.destination} never recorded; it stays ${row.status}`);
        else if (undecided > 0) apart('evidence undecidable (mined after the approval not shown)');
        else violation(`${rec.refundId} (${rec.behaviour}) paid in full after approval to its destination (${paid} ≥ ${amount}) but ${row.status}, amountPaid ${row.amount_paid}`);
      }
    }
    // Events and the API.
    const claimedEvents = eventCount.get(`refund.claimed ${rec.refundId}`) ?? 0;
    const completedEvents = eventCount.get(`refund.completed ${rec.refundId}`) ?? 0;
    const wasClaimed = ['claimed', 'approved', 'completed'].includes(row.status) || row.destination !== null;
    if (claimedEvents !== (wasClaimed ? 1 : 0)) violation(`${rec.refundId} (${row.status}) has ${claimedEvents} refund.claimed`);
    if (completedEvents !== (row.status === 'completed' ? 1 : 0)) violation(`${rec.refundId} (${row.status}) has ${completedEvents} refund.completed`);
    const view = await api(rec.refundId);
    if (view.status !== 200 || view.body.status !== row.status || (view.body.txHash ?? null) !== row.tx_hash) {
      violation(`GET /refunds/${rec.refundId}: ${view.status} ${String(view.body.status)} ${String(view.body.txHash)}, database ${row.status} ${row.tx_hash}`);
    }
  }
  return report;
}

const BEHAVIOUR_LABEL: Record<RefundBehaviour, string> = {
  'on-time': 'on time',
  'partial-then-rest': 'partly then the rest',
  'partial-only': 'partly only',
  'wrong-address': 'wrong address',
  'wrong-then-right': 'wrong then right',
  early: 'before approval',
  'early-then-right': 'before approval then again',
  late: 'late',
};

/** The closing note's lines. */
export function formatRefunds(r: RefundReport): string[] {
  const outcomes = (Object.keys(BEHAVIOUR_LABEL) as RefundBehaviour[])
    .filter((b) => r.outcomes[b])
    .map((b) => `${BEHAVIOUR_LABEL[b]} ${r.outcomes[b]![1]}/${r.outcomes[b]![0]}`)
    .join(', ');
  const apart = Object.entries(r.apart).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  const notCreated = r.planned - r.issued - Object.values(r.skipped).reduce((s, n) => s + n, 0);
  const skipped = [...(notCreated > 0 ? [`order not created ${notCreated}`] : []), ...Object.entries(r.skipped).map(([k, n]) => `${k} ${n}`)].join(', ');
  return [
    `refunds               ${r.planned} planned${skipped ? ` (not issued: ${skipped})` : ''}, ${r.issued} issued, ${r.claimed} claimed, ${r.approved} approved, ${r.completed} completed; merchant payments: ${r.payments.destination} to destinations after approval, ${r.payments.early} before approval, ${r.payments.wrong} to wrong addresses`,
    `refund outcomes       completed/approved by how the merchant paid: ${outcomes || 'none'}; apart: ${apart}; refund violations ${r.violations.length}`,
  ];
}
