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
