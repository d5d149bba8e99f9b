import { sql } from 'drizzle-orm';
import { prepareStatement, type DbOrTx } from '../../db/client';
import type { MiningEvidence } from './head-observations';
import { usableClock } from './clock-witness';
import type { UnattributedReason } from '../transfers/transfers';

/**
 * Who a transfer into a pool address belongs to (design.md §4, §4b): the one authority for
 * "who held this address when the transfer happened". A transfer belongs to the assignment that
 * held the address when its block was mined. When that was is told by the service's own
 * observations of the chain's head (head-observations.ts), never by the block's timestamp (chain
 * clocks may be off by any amount):
 *   - the block was mined BY the first time the service saw a block at or past its height that is
 *     on the chain the transfer is on (minedBy; looks at orphaned blocks are forgotten before a
 *     range is recorded, canonical-evidence.ts);
 *   - it was mined AFTER the last time a provider still answered a head below it (minedAfter).
 * An assignment A (started T0, ended T1 or open) gets the transfer when both hold:
 *   1. the block did not exist when A began: it was not seen by T0 (minedBy > T0) and the
 *      service had looked for it no earlier than L before T0 (minedAfter ≥ T0 − L), where L is
 *      the chain's HEAD_LAG_SECONDS (a margin for a provider behind the chain and for the time
 *      between two looks at the head; a look older than L before T0 proves nothing);
 *   2. the block existed before A ended: minedBy ≤ T1 (strict: seen before the hand-over).
 * Where the chain's consensus ties block timestamps to wall-clock slots and the service has
 * measured that clock around the block, the block's timestamp is a second witness
 * (clock-witness.ts): mined after its window's start proves 1's "did not exist when A began"
 * (no L: the window carries its own margin), mined by its window's end proves 2.
 * Otherwise the transfer stays unattributed, recorded and visible, with its reason:
 *   - `no_holder`: the evidence places the block where nobody held the address (before its first
 *     assignment, after an assignment ended: cooling down or back in the pool);
 *   - `undecidable`: the block may have been mined before or after a hand-over (the scanner was
 *     stalled or behind, the workers were down while the API handed the address out, a payment
 *     mined in the last moments of an assignment and seen after it ended).
 * At most one assignment can satisfy both: consecutive assignments of an address are at least the
 * effective cooldown (≥ S > L, core/pool/allocation.ts) apart. Decided from stored facts only.
 */

export interface AssignmentSpan {
  assignmentId: number;
  poolAddressId: number;
  kind: 'order' | 'deposit';
  orderId: string | null;
  depositBindingId: string | null;
  startedAt: Date;
  endedAt: Date | null;
}

/** Why a transfer is attributed to nobody: the list (core/transfers/transfers.ts) filters by it. */
export type { UnattributedReason };

export type AttributionDecision = { assignment: AssignmentSpan; reason: null } | { assignment: null; reason: UnattributedReason };

/** An assignment's row (driver values: timestamps as text). */
interface AssignmentRow extends Record<string, unknown> {
  id: string | number;
  pool_address_id: string | number;
  kind: 'order' | 'deposit';
  order_id: string | null;
  deposit_binding_id: string | null;
  started_at: string;
  ended_at: string | null;
}

/** `from`/`to` unbounded are '-infinity'/'infinity': one text for every call. */
const assignmentsAroundStatement = prepareStatement<{ poolAddressIds: number[]; from: string; to: string }>(
  'detection.assignments_around',
  sql`
    select id, pool_address_id, kind, order_id, deposit_binding_id, started_at, ended_at
    from address_assignments
    where pool_address_id = any(${sql.placeholder('poolAddressIds')}::bigint[])
      and started_at <= ${sql.placeholder('to')}::timestamptz
      and (ended_at is null or ended_at >= ${sql.placeholder('from')}::timestamptz)
    order by pool_address_id, started_at`,
);

/** Assignments of some addresses that may have held them between `from` (null: any time) and `to` (null: now). */
export async function assignmentsAround(db: DbOrTx, poolAddressIds: number[], from: Date | null, to: Date | null): Promise<AssignmentSpan[]> {
  if (poolAddressIds.length === 0) return [];
  const rows = await assignmentsAroundStatement.run<AssignmentRow>(db, {
    poolAddressIds,
    from: from === null ? '-infinity' : from.toISOString(),
    to: to === null ? 'infinity' : to.toISOString(),
  });
  return rows.map((r) => ({
    assignmentId: Number(r.id),
    poolAddressId: Number(r.pool_address_id),
    kind: r.kind,
    orderId: r.order_id,
    depositBindingId: r.deposit_binding_id,
    startedAt: new Date(r.started_at),
    endedAt: r.ended_at === null ? null : new Date(r.ended_at),
  }));
}

/**
 * The evidence as it is used: a minedAfter later than minedBy (a provider answering an older
 * head after another had shown the block) is cut back to minedBy, the one that is proof.
 */
export function usableEvidence(e: MiningEvidence): MiningEvidence {
  if (e.minedAfter && e.minedBy && e.minedAfter.getTime() > e.minedBy.getTime()) return { ...e, minedAfter: e.minedBy, minedBy: e.minedBy };
  return e;
}

/**
 * Pure: the assignment a transfer belongs to, or why none, from the address's assignments (any
 * order) and the evidence of when its block was mined. `headLagSeconds` is the chain's L.
 */
export function attributeTransfer(
  spans: readonly AssignmentSpan[],
  transfer: { poolAddressId: number } & MiningEvidence,
  headLagSeconds: number,
): AttributionDecision {
  const { own, notYetAt, existedAt } = evidenceAgainst(spans, transfer, headLagSeconds);
  // Seen before it began is proof it existed then, whatever the margin says.
  const held = own.find((s) => notYetAt(s.startedAt) && !existedAt(s.startedAt) && (s.endedAt === null || existedAt(s.endedAt)));
  if (held) return { assignment: held, reason: null };
  // Could an assignment have held the address when the block was mined? Then the evidence cannot decide.
  return { assignment: null, reason: possibleHolders(spans, transfer, headLagSeconds).length > 0 ? 'undecidable' : 'no_holder' };
}

/**
 * The rule's reading of the evidence against the address's own assignments (oldest first), shared
 * by the decision and by the candidates, so both read the evidence the same way.
 */
function evidenceAgainst(spans: readonly AssignmentSpan[], transfer: { poolAddressId: number } & MiningEvidence, headLagSeconds: number) {
  const { minedAfter, minedBy } = usableEvidence(transfer);
  // The block-timestamp witness (clock-witness.ts), where established: its margin is its own tolerance, not L.
  const clock = usableClock(transfer);
  const lag = headLagSeconds * 1000;
  const own = spans.filter((s) => s.poolAddressId === transfer.poolAddressId).sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  return {
    own,
    notYetAt: (t: Date) => (minedAfter !== null && minedAfter.getTime() >= t.getTime() - lag) || (clock !== null && clock.after.getTime() >= t.getTime()),
    existedAt: (t: Date) => (minedBy !== null && minedBy.getTime() <= t.getTime()) || (clock !== null && clock.by.getTime() <= t.getTime()),
    minedAfterEnd: (t: Date) => (minedAfter !== null && minedAfter.getTime() >= t.getTime()) || (clock !== null && clock.after.getTime() >= t.getTime()),
    /** The latest time the block is known to have been mined after, and the earliest it is known to have existed by (null: unknown). */
    after: latest(minedAfter, clock?.after ?? null),
    by: earliest(minedBy, clock?.by ?? null),
  };
}

/**
 * Pure: whether the evidence proves the block did not exist yet at `t` (and was not seen before it),
 * by the same reading as an assignment's start: a refund's payment counts only if it was mined
 * after the refund was approved (core/refunds/refund-settlement.ts).
 */
export function minedAfterTime(evidence: MiningEvidence, t: Date, headLagSeconds: number): boolean {
  const { notYetAt, existedAt } = evidenceAgainst([], { poolAddressId: 0, ...evidence }, headLagSeconds);
  return notYetAt(t) && !existedAt(t);
}

/** Assignments that could have held the address when the block was mined (the evidence rules none out: undecidable). */
function possibleHolders(spans: readonly AssignmentSpan[], transfer: { poolAddressId: number } & MiningEvidence, headLagSeconds: number): AssignmentSpan[] {
  const { own, existedAt, minedAfterEnd } = evidenceAgainst(spans, transfer, headLagSeconds);
  return own.filter((s) => !existedAt(s.startedAt) && !(s.endedAt !== null && minedAfterEnd(s.endedAt)));
}

const latest = (a: Date | null, b: Date | null) => (a === null ? b : b === null || a.getTime() >= b.getTime() ? a : b);
const earliest = (a: Date | null, b: Date | null) => (a === null ? b : b === null || a.getTime() <= b.getTime() ? a : b);

/**
 * How far from the block a no_holder transfer's neighbouring holders are still candidates: the
 * holder that ended before it (a payer paying late, or twice) within a day of the block, the one that
 * began after it (a payer quicker than the hand-over) within an hour.
 */
export const CANDIDATE_PREVIOUS_WINDOW_MS = 24 * 3600_000;
export const CANDIDATE_NEXT_WINDOW_MS = 3600_000;

export type CandidateRelation = 'possible' | 'previous' | 'next';

/**
 * Pure: who an unattributed transfer could have been meant for (design.md §4c), read from the same
 * evidence as the decision; never changes it and credits nothing. `undecidable`: every assignment
 * the rule found possible. `no_holder`: the assignment that ended most recently before the block
 * (within CANDIDATE_PREVIOUS_WINDOW_MS of when it was last known unmined) and the one that began
 * first after it (within CANDIDATE_NEXT_WINDOW_MS of when it was first known mined); with no
 * evidence on a side, that side is unbounded. `spans` must cover those windows
 * (assignmentsAround with the bounds widened by them).
 */
export function unattributedCandidates(
  spans: readonly AssignmentSpan[],
  transfer: { poolAddressId: number } & MiningEvidence,
  headLagSeconds: number,
  reason: UnattributedReason,
): { span: AssignmentSpan; relation: CandidateRelation }[] {
  if (reason === 'undecidable') return possibleHolders(spans, transfer, headLagSeconds).map((span) => ({ span, relation: 'possible' }));
  const { own, existedAt, minedAfterEnd, after, by } = evidenceAgainst(spans, transfer, headLagSeconds);
  const previous = own
    .filter((s) => s.endedAt !== null && minedAfterEnd(s.endedAt) && (after === null || s.endedAt.getTime() >= after.getTime() - CANDIDATE_PREVIOUS_WINDOW_MS))
    .sort((a, b) => b.endedAt!.getTime() - a.endedAt!.getTime())[0];
  const next = own.find((s) => existedAt(s.startedAt) && (by === null || s.startedAt.getTime() <= by.getTime() + CANDIDATE_NEXT_WINDOW_MS));
  return [
    ...(previous ? [{ span: previous, relation: 'previous' as const }] : []),
    ...(next && next !== previous ? [{ span: next, relation: 'next' as const }] : []),
  ];
}
