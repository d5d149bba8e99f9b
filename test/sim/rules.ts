/**
 * The attribution and finality rules the simulation checks, kept in one place because they are
 * changing (issue 14: transfer identity by index within the transaction, `reorged` for reorgs
 * beyond confirmations, the skew attribution rule). These encode the CURRENT rules of
 * design.md §4: identity = (chain, tx hash, log index); a confirmed transfer is final (a deeper
 * reorg leaves it confirmed and credited); a pending one orphaned by a reorg becomes `dropped`.
 */

/** A transfer's identity from the chain's point of view. */
export function transferIdentity(t: { txHash: string; logIndex: number }): string {
  return `${t.txHash.toLowerCase()}:${t.logIndex}`;
}

/** Statuses a recorded transfer may have once its log is no longer on the canonical chain. */
export function statusAllowedWhenOrphaned(status: string): boolean {
  // dropped: orphaned while pending. confirmed: orphaned by a reorg deeper than the required
  // confirmations, which under the current rules never takes back a credit.
  return status === 'dropped' || status === 'confirmed';
}

/** Statuses a transfer whose log is on the canonical chain must have at quiescence. */
export const CANONICAL_FINAL_STATUS = 'confirmed';

/** Events the simulation's endpoints subscribe to (alerts are left out: they depend on pool levels). */
export const PAYMENT_EVENT_TYPES = ['order.completed', 'order.expired', 'deposit.pending', 'deposit.confirmed'] as const;

/** A time range during which an order or a deposit reference held an address. */
export interface Holding {
  holder: { kind: 'order' | 'deposit'; id: string };
  address: string;
  startMs: number;
  /** null: still held. */
  endMs: number | null;
}

/**
 * Who a transfer is attributed to (design.md §4, current rule): the holding that held the address
 * at the block's time. Block times have whole seconds while holdings start at a millisecond, so
 * the block's second is taken as a whole: the holder at the end of that second, else at its start.
 */
export function holderAt(holdings: readonly Holding[], address: string, blockTimeMs: number): Holding['holder'] | null {
  const at = (t: number) => holdings.find((h) => h.address === address && h.startMs <= t && (h.endMs === null || h.endMs > t));
  return (at(blockTimeMs + 999) ?? at(blockTimeMs))?.holder ?? null;
}

/** Whether a transfer attributed to an order counts toward it: same token, block time from the creation second to the grace end. */
export function countsTowardOrder(order: { currency: string; createdAtMs: number; graceEndsAtMs: number }, t: { currency: string; blockTimeMs: number }): boolean {
  return t.currency === order.currency && t.blockTimeMs >= Math.floor(order.createdAtMs / 1000) * 1000 && t.blockTimeMs <= order.graceEndsAtMs;
}

/**
 * A transfer orphaned by a reorg deeper than the required confirmations after it was confirmed
 * still counts (current rule: a confirmed transfer is final). Issue 14 changes this to `reorged`.
 */
export const ORPHANED_CONFIRMED_STILL_COUNTS = true;
