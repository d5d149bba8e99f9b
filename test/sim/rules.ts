/**
 * The attribution and finality rules the simulation checks, kept in one place because they
 * change with the detection core (design.md §4, §4b), written from the design (nothing here comes
 * from core/): attribution by the holder at the block time or the clock-skew rule (holderAt),
 * counting toward an order (countsTowardOrder); identity = (chain, tx hash, index among the
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

/**
 * An assignment of an address to an order or a deposit reference, as the service recorded it
 * (address_assignments): from when to when it held the address, and the highest block of each
 * chain the service had seen when it began.
 */
export interface Holding {
  holder: { kind: 'order' | 'deposit'; id: string };
  address: string;
  startMs: number;
  /** null: still held. */
  endMs: number | null;
  /** chain id → highest block number seen when the holding began; a chain absent: nothing seen. */
  headsSeen: Readonly<Record<string, number>>;
}

/** What attribution needs of a transfer. */
export interface AttributionFacts {
  to: string;
  chainId: string;
  blockNumber: number;
  /** The block's timestamp (whole seconds, in ms). */
  blockTimeMs: number;
}

/**
 * Who a transfer is attributed to (design.md §4, §4b), with S the chain's skew in seconds:
 * - the holding that held the address at the block time exactly (start ≤ t < end);
 * - else the address's next holding B (the first one beginning after t), only when
 *   1. B began at most S after the block time,
 *   2. the block is above the highest block of the chain the service had seen when B began
 *      (the block did not exist yet), and
 *   3. the holding before B (any kind) had ended at least S before B began (one still open blocks);
 * - else nobody.
 */
export function holderAt(holdings: readonly Holding[], t: AttributionFacts, skewSeconds: number): Holding['holder'] | null {
  const mine = holdings.filter((h) => h.address === t.to);
  const held = mine.find((h) => h.startMs <= t.blockTimeMs && (h.endMs === null || t.blockTimeMs < h.endMs));
  if (held) return held.holder;
  let next: Holding | null = null;
  for (const h of mine) if (h.startMs > t.blockTimeMs && (next === null || h.startMs < next.startMs)) next = h;
  if (next === null) return null;
  let previous: Holding | null = null;
  for (const h of mine) if (h.startMs < next.startMs && (previous === null || h.startMs > previous.startMs)) previous = h;
  return skewLetsNextTake(previous, next, t, skewSeconds) ? next.holder : null;
}

/**
 * The three conditions under which the next holding B takes a transfer nobody held the address
 * for at its block time; `previous` is the holding of the address before B, if any.
 */
export function skewLetsNextTake(previous: Holding | null, next: Holding, t: AttributionFacts, skewSeconds: number): boolean {
  const skewMs = skewSeconds * 1000;
  // 1. B began at most S after the block time.
  if (next.startMs - t.blockTimeMs > skewMs) return false;
  // 2. The block did not exist yet when B began.
  const seen = next.headsSeen[t.chainId];
  if (seen !== undefined && t.blockNumber <= seen) return false;
  // 3. The previous holding ended at least S before B began; one still open blocks.
  if (previous !== null && (previous.endMs === null || next.startMs - previous.endMs < skewMs)) return false;
  return true;
}

/**
 * Whether a transfer attributed to an order counts toward it: the order's chain and token, block
 * time at or before the grace end. No lower bound: what is attributed to the order before its
 * creation came through the skew rule above, on purpose.
 */
export function countsTowardOrder(
  order: { chainId: string; currency: string; graceEndsAtMs: number },
  t: { chainId: string; currency: string; blockTimeMs: number },
): boolean {
  return t.chainId === order.chainId && t.currency === order.currency && t.blockTimeMs <= order.graceEndsAtMs;
}

/**
 * S of the clock-skew rule for a chain, in whole seconds (design.md §4b): the chain's block time × 2
 * + 60 s, unless ATTRIBUTION_SKEW_SECONDS_<CHAIN> sets it.
 */
export function skewSecondsFor(blockTimeMs: number, override: string | undefined): number {
  return override !== undefined ? Number(override.trim()) : Math.ceil((blockTimeMs * 2) / 1000) + 60;
}

/** A transfer orphaned after it was confirmed (`reorged`) still counts: a credit is never taken back. */
export const ORPHANED_CONFIRMED_STILL_COUNTS = true;

/** A solidified block of a solidifying chain (Tron), and when it was solidified (machine clock, ms). */
export interface SolidifiedBlock {
  hash: string;
  atMs: number;
}

/**
 * When Tron credits (design.md §4b, issue 17): a transfer is confirmed when its block is
 * solidified, never before — so a transfer confirmed (or `reorged`, which is confirmed then
 * orphaned) must sit in the block solidified at its height, and its confirmation time must not
 * precede that solidification. Returns what is wrong, or null. EVM chains confirm by counting
 * blocks instead (ORDER_CONFIRMATIONS), checked through the final statuses.
 */
export function solidificationBreach(t: { blockNumber: number; blockHash: string; confirmedAtMs: number | null }, solidified: ReadonlyMap<number, SolidifiedBlock>): string | null {
  const s = solidified.get(t.blockNumber);
  if (!s) return `confirmed in block ${t.blockNumber}, which was never solidified`;
  if (s.hash.toLowerCase() !== t.blockHash.toLowerCase()) return `confirmed in block ${t.blockNumber} ${t.blockHash}, but ${s.hash} was solidified at that height`;
  // Database timestamps keep microseconds; the machine clock is shared by the service and the node.
  if (t.confirmedAtMs === null) return `confirmed with no confirmation time`;
  if (t.confirmedAtMs < s.atMs - 1) return `confirmed ${s.atMs - t.confirmedAtMs} ms before block ${t.blockNumber} was solidified`;
  return null;
}
