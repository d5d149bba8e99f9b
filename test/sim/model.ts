import { countsTowardOrder, holderAt, ORPHANED_CONFIRMED_STILL_COUNTS, type Holding } from './rules';

/**
 * The reference model (issue 16, step 2): plain TypeScript from the spec and design.md §4/§4b,
 * importing nothing from core/. Fed the chain's final canonical transfers, the holdings of every
 * address (who held it from when to when, as the service recorded them), the evidence of when each
 * block was mined (the service's looks at the chain head), each chain's L and the orders' terms, it
 * predicts each order's final status and amountReceived, each transfer's attribution, each deposit
 * reference's deposits, and the events every endpoint must receive. The rule-specific parts live
 * in rules.ts.
 */
export interface ModelTransfer {
  identity: string;
  chainId: string;
  to: string;
  currency: string;
  amount: bigint;
  blockNumber: number;
  /** The block's timestamp (whole seconds, in ms): counting toward an order's grace end only. */
  blockTimeMs: number;
  /** false: the log left the chain after the service confirmed it (a reorg deeper than the confirmations). */
  canonical: boolean;
  /**
   * The evidence of when it was mined, as the service recorded it from its looks at the chain head
   * (a stored fact, like the holdings; for a re-mined transaction, that of its first sighting).
   * Absent: the service never recorded the transfer (an invariant violation already).
   */
  evidence?: { minedAfterMs: number | null; minedByMs: number | null; clockAfterMs?: number | null; clockByMs?: number | null };
}

export interface ModelOrder {
  id: string;
  organizationId: string;
  address: string;
  chainId: string;
  currency: string;
  amount: bigint;
  graceEndsAtMs: number;
}

export interface ModelEndpoint {
  id: string;
  organizationId: string;
  events: string[];
  /** Still enabled at the end of the run. */
  enabled: boolean;
}

export interface ModelInput {
  transfers: ModelTransfer[];
  holdings: Holding[];
  /** Per chain id: L (HEAD_LAG_SECONDS) of the attribution rule, in seconds. */
  lagSeconds: Map<string, number>;
  orders: ModelOrder[];
  /** Deposit reference bindings: id → organization. */
  bindings: Map<string, string>;
  endpoints: ModelEndpoint[];
}

export interface Prediction {
  attribution: Map<string, { kind: 'order' | 'deposit'; id: string } | null>;
  orders: Map<string, { status: 'completed' | 'expired'; amountReceived: bigint }>;
  /** binding id → identities of the transfers that are its deposits. */
  deposits: Map<string, string[]>;
  /** endpoint id → "type subject" keys it must receive (enabled endpoints: exactly these). */
  events: Map<string, Set<string>>;
}

export function predict(input: ModelInput): Prediction {
  const attribution = new Map<string, { kind: 'order' | 'deposit'; id: string } | null>();
  const byOrder = new Map<string, ModelTransfer[]>();
  const deposits = new Map<string, string[]>();
  for (const t of input.transfers) {
    if (!t.canonical && !ORPHANED_CONFIRMED_STILL_COUNTS) continue;
    const lag = input.lagSeconds.get(t.chainId);
    if (lag === undefined) throw new Error(`the model has no HEAD_LAG_SECONDS for chain ${t.chainId}`);
    if (!t.evidence) continue;
    const holder = holderAt(input.holdings, { to: t.to, ...t.evidence }, lag);
    attribution.set(t.identity, holder);
    if (holder?.kind === 'order') byOrder.set(holder.id, [...(byOrder.get(holder.id) ?? []), t]);
    if (holder?.kind === 'deposit') deposits.set(holder.id, [...(deposits.get(holder.id) ?? []), t.identity]);
  }
  const orders = new Map<string, { status: 'completed' | 'expired'; amountReceived: bigint }>();
  for (const o of input.orders) {
    // At quiescence every counted transfer is confirmed, and expiry waits for all of them.
    const received = (byOrder.get(o.id) ?? []).filter((t) => countsTowardOrder(o, t)).reduce((s, t) => s + t.amount, 0n);
    orders.set(o.id, { status: received >= o.amount ? 'completed' : 'expired', amountReceived: received });
  }
  const orgEvents = new Map<string, string[]>();
  const add = (org: string, key: string) => orgEvents.set(org, [...(orgEvents.get(org) ?? []), key]);
  for (const o of input.orders) add(o.organizationId, `order.${orders.get(o.id)!.status} ${o.id}`);
  for (const [binding, ids] of deposits) {
    const org = input.bindings.get(binding);
    if (!org) continue;
    for (const id of ids) add(org, `deposit.confirmed ${id}`);
  }
  const events = new Map<string, Set<string>>();
  for (const ep of input.endpoints) {
    events.set(ep.id, new Set((orgEvents.get(ep.organizationId) ?? []).filter((k) => ep.events.includes(k.split(' ')[0]))));
  }
  return { attribution, orders, deposits, events };
}
