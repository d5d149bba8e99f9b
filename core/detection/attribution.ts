import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';

/**
 * Who a transfer into a pool address belongs to (design.md §4, §4b): the one authority for
 * "who held this address at time t". One query loads the assignments of the addresses involved
 * around the block times; a pure function decides each transfer from those stored facts only,
 * so a live scan, a catch-up after downtime and a rescan after a reorg give the same answer.
 *
 * Clock skew: block timestamps lag wall time. A transfer into an address that nobody held at its
 * block time goes to the address's next assignment B only when
 *   1. B began at most S seconds after the block time,
 *   2. the block did not exist yet when B began: its number is above the highest block of that
 *      chain the scanner had seen when B began (heads_seen, recorded on B's assignment), and
 *   3. the previous assignment of the address ended at least S before B began.
 * Otherwise it stays unattributed (recorded and visible, never credited silently).
 */

export interface AssignmentSpan {
  assignmentId: number;
  poolAddressId: number;
  kind: 'order' | 'deposit';
  orderId: string | null;
  depositBindingId: string | null;
  startedAt: Date;
  endedAt: Date | null;
  headsSeen: Record<string, number>;
}

/** Assignments of some addresses that may matter for blocks stamped between `from` and `to`. */
export async function assignmentsAround(db: DbOrTx, poolAddressIds: number[], from: Date, to: Date, skewSeconds: number): Promise<AssignmentSpan[]> {
  if (poolAddressIds.length === 0) return [];
  const lower = new Date(from.getTime() - skewSeconds * 1000);
  const upper = new Date(to.getTime() + skewSeconds * 1000);
  const rows = (await db.execute(sql`
    select id, pool_address_id, kind, order_id, deposit_binding_id, started_at, ended_at, heads_seen
    from address_assignments
    where pool_address_id = any(${sql.param(poolAddressIds)}::bigint[])
      and started_at <= ${upper.toISOString()}::timestamptz
      and (ended_at is null or ended_at > ${lower.toISOString()}::timestamptz)
    order by pool_address_id, started_at`)) as unknown as {
    id: string | number;
    pool_address_id: string | number;
    kind: 'order' | 'deposit';
    order_id: string | null;
    deposit_binding_id: string | null;
    started_at: string | Date;
    ended_at: string | Date | null;
    heads_seen: Record<string, number | string> | null;
  }[];
  return rows.map((r) => ({
    assignmentId: Number(r.id),
    poolAddressId: Number(r.pool_address_id),
    kind: r.kind,
    orderId: r.order_id,
    depositBindingId: r.deposit_binding_id,
    startedAt: new Date(r.started_at),
    endedAt: r.ended_at === null ? null : new Date(r.ended_at),
    headsSeen: Object.fromEntries(Object.entries(r.heads_seen ?? {}).map(([k, v]) => [k, Number(v)])),
  }));
}

/**
 * Pure: the assignment a transfer belongs to, from the address's assignments (any order), or null.
 * `blockTime` is the block's timestamp (whole seconds), `skewSeconds` the chain's S.
 */
export function attributeTransfer(
  spans: readonly AssignmentSpan[],
  transfer: { poolAddressId: number; chainId: string; blockNumber: number; blockTime: Date },
  skewSeconds: number,
): AssignmentSpan | null {
  const own = spans.filter((s) => s.poolAddressId === transfer.poolAddressId).sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  const t = transfer.blockTime.getTime();
  const held = own.find((s) => s.startedAt.getTime() <= t && (s.endedAt === null || s.endedAt.getTime() > t));
  if (held) return held;
  const nextIndex = own.findIndex((s) => s.startedAt.getTime() > t);
  if (nextIndex < 0) return null;
  const next = own[nextIndex];
  const s = skewSeconds * 1000;
  // 1. began at most S after the block time.
  if (next.startedAt.getTime() - t > s) return null;
  // 2. the block did not exist yet when it began (a chain never seen counts as seen up to nothing).
  const seen = next.headsSeen[transfer.chainId];
  if (seen !== undefined && transfer.blockNumber <= seen) return null;
  // 3. the previous assignment ended at least S before it began (an effective cooldown of S).
  const previous = nextIndex > 0 ? own[nextIndex - 1] : null;
  if (previous && (previous.endedAt === null || next.startedAt.getTime() - previous.endedAt.getTime() < s)) return null;
  return next;
}
