import { and, eq, gt, lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { chainHeadObservations } from '../../db/schema';

/**
 * What the service saw of a chain's head, and when (design.md §4b): the evidence attribution
 * (attribution.ts) uses to place a block before or after an address changed hands. Every head a
 * provider answers (the scan, the confirmations job) or pushes (the WebSocket subscription) is
 * recorded per height, with the hash of the block seen there:
 *   - first_seen_at: the earliest time the service knew that block existed (the answer's arrival):
 *     the blocks of its branch at or below it were mined by then — proof about a canonical block
 *     only while the block seen is canonical (checked before use: canonical-evidence.ts);
 *   - last_seen_at: the latest time a provider still answered the height as the head (the
 *     request's departure): a block above it was not mined yet then (up to the provider's lag,
 *     the margin L of attribution.ts), whichever block it saw there.
 * Both only ever improve (least / greatest), whichever process writes them, in whatever order, as
 * long as the same block is seen. Another block seen at a height (the chain reorganised, or a
 * provider is on another branch) replaces the row's block, and first_seen_at becomes the later of
 * the two sightings: the time another block was seen proves nothing of this one, and a late write
 * of an older look must not date it earlier. A replacement only makes first_seen_at later, which
 * only ever makes attribution less decisive, never gives a transfer to anyone it was not. A look
 * without a hash (a row from before migration 0015) never lowers a hashed row's first_seen_at.
 */

export interface HeadObservation {
  chainId: string;
  head: number;
  /** When the request that learnt it left (a pushed head: when it arrived). */
  askedAt: Date;
  /** When the answer arrived. */
  answeredAt: Date;
  /** The hash of the block seen at that height; null where the source does not tell it. */
  hash: string | null;
  /** That block's timestamp, Unix seconds (the clock witness's sample, clock-witness.ts); absent where the source does not tell it. */
  blockTimestamp?: number;
}

/**
 * Records one observation of a chain's head (one statement). An answer below the highest head
 * already seen comes from a provider behind the others: it proves nothing about what was not mined
 * yet, and is left out.
 */
export async function recordHeadObservation(db: DbOrTx, o: HeadObservation): Promise<void> {
  await db.execute(sql`
    insert into chain_head_observations (chain_id, head_number, block_hash, first_seen_at, last_seen_at, block_timestamp)
    select ${o.chainId}, ${o.head}, ${o.hash}::text, ${o.answeredAt.toISOString()}::timestamptz, ${o.askedAt.toISOString()}::timestamptz,
      ${o.blockTimestamp === undefined ? null : new Date(o.blockTimestamp * 1000).toISOString()}::timestamptz
    where not exists (select 1 from chain_head_observations where chain_id = ${o.chainId} and head_number > ${o.head})
    on conflict (chain_id, head_number) do update set
      block_hash = coalesce(excluded.block_hash, chain_head_observations.block_hash),
      first_seen_at = case
        -- The same block, or two looks that both did not say which: the earliest sighting.
        when excluded.block_hash is not distinct from chain_head_observations.block_hash then least(chain_head_observations.first_seen_at, excluded.first_seen_at)
        -- A look that did not say which block: no proof about the one recorded.
        when excluded.block_hash is null then chain_head_observations.first_seen_at
        -- Another block at this height (or the first look that says which): not before either
        -- sighting — a late write of an older look at another block must not date this one earlier.
        else greatest(chain_head_observations.first_seen_at, excluded.first_seen_at)
      end,
      last_seen_at = greatest(chain_head_observations.last_seen_at, excluded.last_seen_at),
      -- The timestamp of the block the row now holds.
      block_timestamp = case
        when excluded.block_hash is not distinct from chain_head_observations.block_hash then coalesce(chain_head_observations.block_timestamp, excluded.block_timestamp)
        when excluded.block_hash is null then chain_head_observations.block_timestamp
        else excluded.block_timestamp
      end`);
}

/** When a block was mined, as far as the service's observations tell. */
export interface MiningEvidence {
  /** Mined after this (the last time a head below the block was answered); null: never seen below it. */
  minedAfter: Date | null;
  /** Mined by this (the first time a head at or past it was known); null: never seen (not scanned yet). */
  minedBy: Date | null;
  /** Where the block's timestamp puts its mining (clock-witness.ts); absent or null: no such witness. */
  clock?: ClockWindow | null;
}

/** The block-timestamp witness: the block was mined after `after` and by `by`, on the chain's measured clock. */
export interface ClockWindow {
  after: Date;
  by: Date;
}

/**
 * The evidence for each of a chain's block numbers: two index lookups per distinct block. The
 * nearest observed height on each side is used; a farther one could only narrow the interval, so
 * taking the nearest is never wrong, at worst less decisive (providers that disagree). minedBy
 * comes from observations that say which block they saw only, and is proof once that block was
 * checked canonical (canonical-evidence.ts, before the range's transaction); an observation
 * without a hash could have seen a block of an orphaned branch, mined before the canonical one.
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
        where o.chain_id = ${chainId} and o.head_number >= b.n and o.block_hash is not null order by o.head_number asc limit 1) as mined_by
    from unnest(${sql.param(distinct)}::bigint[]) as b(n)`)) as unknown as { block_number: string | number; mined_after: string | Date | null; mined_by: string | Date | null }[];
  for (const r of rows) {
    out.set(Number(r.block_number), {
      minedAfter: r.mined_after === null ? null : new Date(r.mined_after),
      minedBy: r.mined_by === null ? null : new Date(r.mined_by),
    });
  }
  return out;
}

/** An observation that would decide a block's minedBy: its height and the block it saw. */
export interface DecidingObservation {
  height: number;
  hash: string;
}

/** For each block number, the observation that would decide its minedBy (miningEvidence). */
export async function decidingObservations(db: DbOrTx, chainId: string, blockNumbers: number[]): Promise<Map<number, DecidingObservation>> {
  const out = new Map<number, DecidingObservation>();
  const distinct = [...new Set(blockNumbers)];
  if (distinct.length === 0) return out;
  const rows = (await db.execute(sql`
    select b.n as block_number, o.head_number, o.block_hash
    from unnest(${sql.param(distinct)}::bigint[]) as b(n)
    cross join lateral (
      select o.head_number, o.block_hash from chain_head_observations o
      where o.chain_id = ${chainId} and o.head_number >= b.n and o.block_hash is not null
      order by o.head_number asc limit 1) o`)) as unknown as { block_number: string | number; head_number: string | number; block_hash: string }[];
  for (const r of rows) out.set(Number(r.block_number), { height: Number(r.head_number), hash: r.block_hash });
  return out;
}

/** Share-locks these observations (those still holding the block seen) until the transaction ends; returns how many. */
export async function lockDecidingObservations(db: DbOrTx, chainId: string, observations: DecidingObservation[]): Promise<number> {
  if (observations.length === 0) return 0;
  const rows = await db.execute(sql`
    select o.head_number from chain_head_observations o
    join unnest(${sql.param(observations.map((o) => o.height))}::bigint[], ${sql.param(observations.map((o) => o.hash))}::text[]) as c(height, hash)
      on o.head_number = c.height and o.block_hash = c.hash
    where o.chain_id = ${chainId}
    for share of o`);
  return rows.length;
}

/**
 * Forgets one observation that saw a block no longer canonical: it proves nothing about the block
 * now at its height or below. Only if the row still holds that block (a concurrent look may have
 * replaced it with the canonical one).
 */
export async function forgetHeadObservation(db: DbOrTx, chainId: string, height: number, hash: string): Promise<void> {
  await db
    .delete(chainHeadObservations)
    .where(and(eq(chainHeadObservations.chainId, chainId), eq(chainHeadObservations.headNumber, height), eq(chainHeadObservations.blockHash, hash)));
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
