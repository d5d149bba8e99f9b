import type { DbOrTx } from '../../db/client';
import { SKIPPED, UnstableChainError, type ChainAdapter } from '../chains/adapter-contract';
import { decidingObservations, forgetHeadObservation, lockDecidingObservations, recordHeadObservation, type DecidingObservation, type HeadObservation } from './head-observations';

/**
 * Only observations of canonical blocks decide when a block was mined (design.md §4b). An
 * observation of height h says a block at h existed at first_seen_at — the block it saw. If that
 * block was orphaned (a reorg the scanner never scanned: it was behind, or the height was observed
 * by the confirmations job or a pushed head), the canonical block at h, or at any height below it
 * that the reorg replaced, may have been mined later: taken as proof, a payment mined into the
 * replacement after an order began would count as mined before it (the order never credited), and
 * one mined after an assignment ended as mined before the end (credited to the ended one).
 *
 * So before a range's transaction (RPC allowed here, never inside it), the observation that would
 * decide each transfer's minedBy (the nearest hashed one at or above its block) is checked:
 *   - at the transfer's own height, against the transfer's block hash (no call);
 *   - above it, against the canonical block at that height (known from the range, else one
 *     blockAt per distinct height: usually none, or one for the head when the scanner is behind).
 * One that saw another block is forgotten and the next one above is checked, until each transfer's
 * deciding observation is canonical or there is none (then minedBy stays unknown: attribution
 * credits no ended assignment on it). A canonical block at h proves its ancestors existed by then.
 *
 * Observations without a hash (rows from before migration 0015) never decide minedBy: they could
 * have seen an orphaned block. They still bound minedAfter, which is a statement about the height
 * only (a provider answered a head below the block), with the margin L for providers behind.
 *
 * A height the provider cannot answer yet (a backend behind a load balancer, at or below the head
 * it just gave) is no proof either way: the range is read again. One above the provider's head (its
 * chain is shorter now) or a slot that passed without a block (Solana) holds no block of this chain:
 * the observation there is forgotten.
 *
 * What was checked is checked again inside the range's transaction, under a share lock on those
 * rows (sameDecidingObservations): a look written meanwhile by another process (a pushed head, the
 * confirmations job) or a forget by another worker cannot change the evidence between the check and
 * the record.
 */

/** Rounds of forget-and-look-again before the range is retried (a provider flipping between branches). */
const MAX_ROUNDS = 20;

export interface CanonicalHashes {
  /** Each transfer's block number and the hash of its block (canonical: the range was checked). */
  transferBlocks: Map<number, string>;
  /** Other heights whose canonical hash the caller already holds (the range's end, the checkpoint). */
  known: Map<number, string>;
  /** The head the provider gave for this range: heights above it are not on its chain now. */
  providerHead: number;
}

/** The deciding observation checked for each transfer block (none: no hashed observation at or above it). */
export type CheckedEvidence = Map<number, DecidingObservation | null>;

/**
 * Forgets the observations that would decide the transfers' minedBy but saw a block that is not
 * canonical, and records `head` again (the look that brought the range, which a forgotten higher
 * observation had kept out). Returns how many were forgotten and the deciding observation checked
 * for each transfer block. Throws UnstableChainError when the observations keep changing or a
 * height cannot be answered yet (the range is read again).
 */
export async function forgetNonCanonicalEvidence(
  db: DbOrTx,
  adapter: Pick<ChainAdapter, 'blockAt' | 'heightAt'>,
  chainId: string,
  hashes: CanonicalHashes,
  rangeHead: HeadObservation | null,
): Promise<{ forgotten: number; checked: CheckedEvidence }> {
  let head = rangeHead;
  /** null: no block of this chain at that height. */
  const canonical = new Map<number, string | null>([...hashes.known, ...hashes.transferBlocks]);
  const canonicalAt = async (height: number): Promise<string | null> => {
    if (canonical.has(height)) return canonical.get(height)!;
    const answer = adapter.heightAt ? await adapter.heightAt(height) : await adapter.blockAt(height);
    if (answer === null && height <= hashes.providerHead) throw new UnstableChainError(`${chainId}: block ${height} is not available yet`);
    const hash = answer === null || answer === SKIPPED ? null : answer.hash;
    canonical.set(height, hash);
    return hash;
  };
  const checked: CheckedEvidence = new Map();
  let pending = [...hashes.transferBlocks.keys()];
  let forgotten = 0;
  for (let round = 0; pending.length > 0; round++) {
    if (round === MAX_ROUNDS) throw new UnstableChainError(`${chainId}: head observations kept changing while they were checked`);
    const deciding = await decidingObservations(db, chainId, pending);
    const stale = new Map<string, { height: number; hash: string }>();
    const again: number[] = [];
    for (const block of pending) {
      const o = deciding.get(block) ?? null;
      checked.set(block, o);
      if (!o) continue;
      const expected = o.height === block ? hashes.transferBlocks.get(block)! : await canonicalAt(o.height);
      if (o.hash === expected) continue;
      stale.set(`${o.height}|${o.hash}`, o);
      again.push(block);
    }
    if (again.length === 0) break;
    for (const o of stale.values()) await forgetHeadObservation(db, chainId, o.height, o.hash);
    forgotten += stale.size;
    // The range's own look at the head, if it is the one found stale, is not recorded again.
    if (head && stale.has(`${head.head}|${head.hash}`)) head = null;
    // A stale higher observation kept the range's own look at the head out of the table.
    if (head) await recordHeadObservation(db, head);
    pending = again;
  }
  return { forgotten, checked };
}

/**
 * Inside the range's transaction: locks the checked observations (share) and says whether each
 * transfer block's deciding observation is still the one checked. Locked, they cannot be replaced
 * or forgotten until the transaction ends, and no look can be inserted below one of them (a look
 * below a higher observation is left out, head-observations.ts), so the evidence the record reads
 * is the evidence checked.
 */
export async function sameDecidingObservations(db: DbOrTx, chainId: string, checked: CheckedEvidence): Promise<boolean> {
  const observations = [...new Map([...checked.values()].filter((o) => o !== null).map((o) => [`${o.height}|${o.hash}`, o])).values()];
  if ((await lockDecidingObservations(db, chainId, observations)) !== observations.length) return false;
  const now = await decidingObservations(db, chainId, [...checked.keys()]);
  return [...checked].every(([block, o]) => {
    const current = now.get(block) ?? null;
    return current?.height === o?.height && current?.hash === o?.hash;
  });
}
