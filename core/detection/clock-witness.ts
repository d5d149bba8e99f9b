import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import type { ClockWindow, MiningEvidence } from './head-observations';

/**
 * The block-timestamp witness of attribution (issue 39; README "Payment detection"): a second
 * witness of when a block was mined, for the blocks the service's looks cannot place — mined while
 * every provider of the chain stalled, so no look saw the head below them shortly before an order
 * began, or seen only after a deposit reference was unbound.
 *
 * A block's timestamp is the chain's word, not the service's: it proves nothing by itself (a chain
 * clock may be off by any amount, a local chain's can be set at will). It is used only where the
 * chain's consensus ties timestamps to wall-clock slots (Ethereum proof of stake, Tron; the chain
 * registry's clockWitnessToleranceSeconds, CLOCK_WITNESS_SECONDS_<CHAIN>), and only as far as the
 * service has measured that chain's clock against its own, around the block:
 *   - every look at the head keeps the timestamp of the block it saw (head-observations.ts). Such a
 *     block h was mined by its first sighting and after the last look that still answered a height
 *     below it (less L, the provider's lag): its offset, timestamp minus mining time, lies in
 *     [lo, hi] = [ts − firstSeen, ts − (lastSeenBelow − L)];
 *   - the witness needs looks on both sides of the block (up to SAMPLES below and above, their
 *     timestamps within MAX_SPAN_MS) whose intervals agree within the tolerance T: a chain clock
 *     that jumped or drifted between them shows as intervals that do not (max lo > min hi + T), and
 *     the witness is then off for the block;
 *   - assuming the block's own offset is within T of its neighbours', it was mined after
 *     ts − (min hi + T) and by ts − (max lo − T).
 * T is a whole slot or more, so the witness decides only for blocks at least that far from a
 * hand-over; a window that contradicts the looks' own evidence (usableClock) is dropped.
 * Residual risk (README): a chain whose timestamps jump ahead and back between two looks, which
 * the consensus of a chain it is enabled for does not allow.
 */

/** Looks used on each side of a block. */
const SAMPLES = 4;
/** The looks used must be this close in the chain's time: a long gap may hide a clock that moved. */
const MAX_SPAN_MS = 15 * 60_000;

export interface ClockedBlock {
  number: number;
  /** Unix seconds. */
  timestamp: number;
}

interface OffsetRow extends Record<string, unknown> {
  block_number: string | number;
  below: string | number;
  above: string | number;
  max_lo: string | number | null;
  min_hi: string | number | null;
  span_ms: string | number | null;
}

/**
 * The witness's window for each block of a chain (absent: not established around it).
 * `toleranceSeconds` is the chain's T, `headLagSeconds` its L. One statement for every block.
 */
export async function clockWindows(db: DbOrTx, chainId: string, blocks: ClockedBlock[], toleranceSeconds: number, headLagSeconds: number): Promise<Map<number, ClockWindow>> {
  const out = new Map<number, ClockWindow>();
  const byNumber = new Map(blocks.map((b) => [b.number, b.timestamp]));
  if (byNumber.size === 0) return out;
  const rows = (await db.execute(sql`
    select b.n as block_number,
      count(*) filter (where s.below) as below,
      count(*) filter (where not s.below) as above,
      max(s.lo) as max_lo,
      min(s.hi) as min_hi,
      extract(epoch from max(s.ts) - min(s.ts)) * 1000 as span_ms
    from unnest(${sql.param([...byNumber.keys()])}::bigint[]) as b(n)
    cross join lateral (
      select x.head_number < b.n as below, x.block_timestamp as ts,
        extract(epoch from x.block_timestamp - x.first_seen_at) as lo,
        extract(epoch from x.block_timestamp - (
          select o.last_seen_at from chain_head_observations o
          where o.chain_id = ${chainId} and o.head_number < x.head_number order by o.head_number desc limit 1)) + ${headLagSeconds} as hi
      from (
        (select head_number, block_timestamp, first_seen_at from chain_head_observations
          where chain_id = ${chainId} and head_number < b.n and block_timestamp is not null and block_hash is not null
          order by head_number desc limit ${SAMPLES})
        union all
        (select head_number, block_timestamp, first_seen_at from chain_head_observations
          where chain_id = ${chainId} and head_number >= b.n and block_timestamp is not null and block_hash is not null
          order by head_number asc limit ${SAMPLES})
      ) x
    ) s
    group by b.n`)) as unknown as OffsetRow[];
  for (const r of rows) {
    if (Number(r.below) === 0 || Number(r.above) === 0 || r.max_lo === null || r.min_hi === null || r.span_ms === null) continue;
    const maxLo = Number(r.max_lo);
    const minHi = Number(r.min_hi);
    if (Number(r.span_ms) > MAX_SPAN_MS || maxLo > minHi + toleranceSeconds) continue;
    const ts = byNumber.get(Number(r.block_number))!;
    out.set(Number(r.block_number), {
      after: new Date((ts - minHi - toleranceSeconds) * 1000),
      by: new Date((ts - maxLo + toleranceSeconds) * 1000),
    });
  }
  return out;
}

/**
 * The window as it is used: dropped when it contradicts what the looks proved (the block seen
 * before the window says it was mined, or a look below it after the window says it existed) —
 * the chain's clock did not behave as measured, so it is no witness for this block.
 */
export function usableClock(e: MiningEvidence): ClockWindow | null {
  const c = e.clock;
  if (!c) return null;
  if (e.minedBy && c.after.getTime() > e.minedBy.getTime()) return null;
  if (e.minedAfter && c.by.getTime() < e.minedAfter.getTime()) return null;
  return c;
}
