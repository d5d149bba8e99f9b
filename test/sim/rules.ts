/**
 * The attribution and finality rules the simulation checks, kept in one place because they
 * change with the detection core (design.md §4, §4b): identity = (chain, tx hash, index among the
 * configured tokens' Transfer logs of the transaction); a pending transfer orphaned by a reorg
 * becomes `dropped`; a confirmed one whose (tx, index) does not reappear becomes `reorged` and keeps
 * its credit.
 */

/** A transfer's identity: its transaction and its index within it. */
export function transferIdentity(t: { txHash: string; indexInTx: number }): string {
  return `${t.txHash.toLowerCase()}:${t.indexInTx}`;
}

/** Index within its transaction of each token Transfer log (logs of the configured tokens only). */
export function indexesInTx<L extends { transactionHash: string; logIndex: string }>(logs: readonly L[]): Map<L, number> {
  const byTx = new Map<string, L[]>();
  for (const l of logs) byTx.set(l.transactionHash, [...(byTx.get(l.transactionHash) ?? []), l]);
  const out = new Map<L, number>();
  for (const list of byTx.values()) list.sort((a, b) => Number(a.logIndex) - Number(b.logIndex)).forEach((l, i) => out.set(l, i));
  return out;
}

/** Statuses a recorded transfer may have once it is no longer on the canonical chain. */
export function statusAllowedWhenOrphaned(status: string): boolean {
  return status === 'dropped' || status === 'reorged';
}

/** Statuses that count as confirmed (credited) money. */
export const CONFIRMED_STATUSES = ['confirmed', 'reorged'];

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

/** A transfer orphaned after it was confirmed (`reorged`) still counts: a credit is never taken back. */
export const ORPHANED_CONFIRMED_STILL_COUNTS = true;
