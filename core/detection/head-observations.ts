import { and, eq, gt, lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { chainHeadObservations } from '../../db/schema';

/**
 * What the service saw of a chain's head, and when (design.md §4b): the evidence attribution
 * (attribution.ts) uses to place a block before or after an address changed hands. Every head a
 * provider answers (the scan) or pushes (the WebSocket subscription) is recorded per height:
 *   - first_seen_at: the earliest time the service knew the height existed (the answer's arrival):
 *     a block at or below it was mined by then;
 *   - last_seen_at: the latest time a provider still answered it as the head (the request's
 *     departure): a block above it was not mined yet then.
 * Both only ever improve (least / greatest), whichever process writes them, in whatever order.
 */

export interface HeadObservation {
  chainId: string;
  head: number;
  /** When the request that learnt it left (a pushed head: when it arrived). */
  askedAt: Date;
  /** When the answer arrived. */
  answeredAt: Date;
}

/**
 * Records one observation of a chain's head (one statement). An answer below the highest head
 * already seen comes from a provider behind the others: it proves nothing about what was not mined
 * yet, and is left out.
 */
export async function recordHeadObservation(db: DbOrTx, o: HeadObservation): Promise<void> {
  await db.execute(sql`
    insert into chain_head_observations (chain_id, head_number, first_seen_at, last_seen_at)
    select ${o.chainId}, ${o.head}, ${o.answeredAt.toISOString()}::timestamptz, ${o.askedAt.toISOString()}::timestamptz
    where not exists (select 1 from chain_head_observations where chain_id = ${o.chainId} and head_number > ${o.head})
    on conflict (chain_id, head_number) do update set
      first_seen_at = least(chain_head_observations.first_seen_at, excluded.first_seen_at),
      last_seen_at = greatest(chain_head_observations.last_seen_at, excluded.last_seen_at)`);
}

/** When a block was mined, as far as the service's observations tell. */
export interface MiningEvidence {
  /** Mined after this (the last time a head below the block was answered); null: never seen below it. */
  minedAfter: Date | null;
  /** Mined by this (the first time a head at or past it was known); null: never seen (not scanned yet). */
  minedBy: Date | null;
}

/**
 * The evidence for each of a chain's block numbers: two index lookups per distinct block. The
 * nearest observed height on each side is used; a farther one could only narrow the interval, so
 * taking the nearest is never wrong, at worst less decisive (providers that disagree).
 */
export async function miningEvidence(db: DbOrTx, chainId: string, blockNumbers: number[]): Promise<Map<number, MiningEvidence>> {
  const out = new Map<number, MiningEvidence>();
  const distinct = [...new Set(blockNumbers)];
  if (distinct.length === 0) return out;
  const rows = (await db.execute(sql`
    select b.n as block_number,
      (select o.last_seen_at from chain_head_observations o
        where o.chain_id = ${chainId} and o.head_number < b.n order by o.head_number desc limit 1) as mined_after,
      (select o.first_seen_at from chain_head_observations o
        where o.chain_id = ${chainId} and o.head_number >= b.n order by o.head_number asc limit 1) as mined_by
    from unnest(${sql.param(distinct)}::bigint[]) as b(n)`)) as unknown as { block_number: string | number; mined_after: string | Date | null; mined_by: string | Date | null }[];
  for (const r of rows) {
    out.set(Number(r.block_number), {
      minedAfter: r.mined_after === null ? null : new Date(r.mined_after),
      minedBy: r.mined_by === null ? null : new Date(r.mined_by),
    });
  }
  return out;
}

/**
 * A reorganisation from `forkPoint`: the heights above it now hold other blocks, mined later than
 * the ones the service saw there (a replacement block comes in a later slot). What was seen at
 * those heights is no proof of when the new blocks were mined — kept, a payment mined into a
 * replacement block after an order began would count as seen before it (no_holder, the order
 * never credited). Forgotten, in the reorg's transaction; the next look at the head records the
 * new branch. The evidence left (heights at or below the fork point) is older: it only widens what
 * the service knows of when a new block was mined, so it can never make a transfer anyone's that
 * was not.
 */
export async function forgetHeadObservationsAbove(db: DbOrTx, chainId: string, forkPoint: number): Promise<void> {
  await db.delete(chainHeadObservations).where(and(eq(chainHeadObservations.chainId, chainId), gt(chainHeadObservations.headNumber, forkPoint)));
}

/** Observations kept per chain: old ones only matter to a catch-up of blocks that old. */
export const HEAD_OBSERVATIONS_KEPT_MS = 30 * 86_400_000;

/**
 * Forgets a chain's observations older than HEAD_OBSERVATIONS_KEPT_MS, except the newest of them,
 * which still bounds a catch-up of the blocks mined after it.
 */
export async function forgetOldHeadObservations(db: DbOrTx, chainId: string, now: Date): Promise<void> {
  const cutoff = new Date(now.getTime() - HEAD_OBSERVATIONS_KEPT_MS);
  await db.delete(chainHeadObservations).where(
    and(
      eq(chainHeadObservations.chainId, chainId),
      lt(chainHeadObservations.lastSeenAt, cutoff),
      sql`${chainHeadObservations.headNumber} < (select max(o.head_number) from chain_head_observations o where o.chain_id = ${chainId} and o.last_seen_at < ${cutoff.toISOString()}::timestamptz)`,
    ),
  );
}
