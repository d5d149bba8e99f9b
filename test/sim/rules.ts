/**
 * The attribution and finality rules the simulation checks, kept in one place because they
 * change with the detection core (design.md §4, §4b), written from the design (nothing here comes
 * from core/): attribution by the evidence of when a block was mined (holderAt),
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
 * (address_assignments): from when to when it held the address.
 */
export interface Holding {
  holder: { kind: 'order' | 'deposit'; id: string };
  address: string;
  startMs: number;
  /** null: still held. */
  endMs: number | null;
}

/**
 * What attribution needs of a transfer: its recipient and the evidence of when its block was mined,
 * from the service's own looks at the chain head (design.md §4b): mined after `minedAfterMs` (the
 * last time a head below the block was answered; null: never) and by `minedByMs` (the first time a
 * head at or past it was known; null: never). A block timestamp is evidence only as the window
 * the service stored for it (the clock witness, core/detection/clock-witness.ts, where enabled and
 * established): mined after `clockAfterMs` and by `clockByMs` (null: no witness).
 */
export interface AttributionFacts {
  to: string;
  minedAfterMs: number | null;
  minedByMs: number | null;
  clockAfterMs?: number | null;
  clockByMs?: number | null;
}

/**
 * Who a transfer is attributed to (design.md §4, §4b), with L the chain's HEAD_LAG_SECONDS:
 * the holding H (start T0, end T1 or open) such that the block was not seen by T0 and was looked
 * for no earlier than L before T0 (minedAfter ≥ T0 − L, minedBy > T0), and was seen by T1
 * (minedBy ≤ T1); minedAfter later than minedBy is cut back to minedBy. The clock window, where
 * stored, proves the same without the margin: clockAfter ≥ T0, clockBy ≤ T0 (existed at the
 * start), clockBy ≤ T1. Else nobody.
 */
export function holderAt(holdings: readonly Holding[], t: AttributionFacts, lagSeconds: number): Holding['holder'] | null {
  const by = t.minedByMs;
  const after = t.minedAfterMs !== null && by !== null && t.minedAfterMs > by ? by : t.minedAfterMs;
  const clockAfter = t.clockAfterMs ?? null;
  const clockBy = t.clockByMs ?? null;
  const lag = lagSeconds * 1000;
  const existedAt = (ms: number) => (by !== null && by <= ms) || (clockBy !== null && clockBy <= ms);
  const found = holdings.filter(
    (h) =>
      h.address === t.to &&
      ((after !== null && after >= h.startMs - lag) || (clockAfter !== null && clockAfter >= h.startMs)) &&
      !existedAt(h.startMs) &&
      (h.endMs === null || existedAt(h.endMs)),
  );
  if (found.length > 1) throw new Error(`the rule gives ${found.length} holders for one transfer to ${t.to}`);
  return found[0]?.holder ?? null;
}

/**
 * Whether a transfer attributed to an order counts toward it: the order's chain and token, block
 * time at or before the grace end. No lower bound: attribution decided it belongs to the order.
 */
export function countsTowardOrder(
  order: { chainId: string; currency: string; graceEndsAtMs: number },
  t: { chainId: string; currency: string; blockTimeMs: number },
): boolean {
  return t.chainId === order.chainId && t.currency === order.currency && t.blockTimeMs <= order.graceEndsAtMs;
}

/**
 * S for a chain, in whole seconds (design.md §4b): the chain's block time × 2 + 60 s, unless
 * ATTRIBUTION_SKEW_SECONDS_<CHAIN> sets it. The effective minimum cooldown of an address.
 */
export function skewSecondsFor(blockTimeMs: number, override: string | undefined): number {
  return override !== undefined ? Number(override.trim()) : Math.ceil((blockTimeMs * 2) / 1000) + 60;
}

/** L for a chain (HEAD_LAG_SECONDS_<CHAIN>, else HEAD_LAG_SECONDS, else 2), kept below S. */
export function headLagSecondsFor(skewSeconds: number, chainOverride: string | undefined, globalOverride: string | undefined): number {
  const v = chainOverride ?? globalOverride;
  return Math.min(v !== undefined ? Number(v.trim()) : 2, Math.max(0, skewSeconds - 1));
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
