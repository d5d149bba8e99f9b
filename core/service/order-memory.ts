import type { Protocol } from '../chains/registry';
import { KeyedBatcher } from '../platform/keyed-batcher';
import { AllocationHints } from '../pool/allocation';

/**
 * What order creation keeps per process (the service assembles it into ServiceContext.memory,
 * core/service/process-memory.ts): where this process's creations stand in each pool, and the creations
 * waiting to go together. In the context's room, not core/orders/, so the context names it without
 * importing the folder whose code imports the context (core/orders/orders.ts uses it).
 */
export interface OrdersMemory {
  /** Per organization and protocol, the allocation point of this context's order creations. */
  readonly allocationHints: AllocationHints;
  /** Per organization and protocol, this context's order creations waiting to go together. */
  readonly orderCreations: KeyedBatcher<OrderCreation, OrderCreationOutcome>;
}

export function newOrdersMemory(opts: { allocationHints?: AllocationHints } = {}): OrdersMemory {
  return { allocationHints: opts.allocationHints ?? new AllocationHints(), orderCreations: newOrderCreationBatcher() };
}

/** The values the creation statements bind for one order (core/orders/orders.ts). */
export type CreateOrderStatementValues = {
  id: string;
  organizationId: string;
  orderReference: string;
  payToken: string;
  amount: string;
  currency: string;
  chainId: string;
  protocol: Protocol;
  successUrl: string | null;
  cancelUrl: string | null;
  metadata: string;
  /** The payment link the order is made from (checkout), else null. */
  paymentLinkId: string | null;
  /** Null: the organization's payment_window_minutes. */
  paymentWindowMinutes: number | null;
  graceMinutes: number;
  chainConfirmations: number;
  /** The token's decimals: the organization's max_order_amount is in token units, the amount in base units. */
  tokenDecimals: number;
  now: string;
};

/** What Postgres decided for a new order (driver values). */
export type CreatedRow = {
  pool_address_id: string | number;
  address: string;
  pool_created_at: string;
  pool_recycled_at: string | null;
  payment_window_minutes: number;
  required_confirmations: number;
  /** Timestamps as Postgres's text (the statement computed them). */
  expires_at: string;
  grace_ends_at: string;
};

/**
 * Order creation's group commit: per organization and protocol, one creation statement of this
 * process runs at a time, and creations that arrive meanwhile go together in the next one (up to
 * ORDER_BATCH_MAX): one round trip, one commit and one plan for several orders, where Postgres
 * spent most of a lone creation's time. A lone creation goes at once, alone. One statement in
 * flight, not two: the batches are larger (bench:orders; figures in scripts/bench/FINDINGS.md). The money rules are those of a lone creation: each order gets
 * its own address, in allocation order by arrival, and a batch is one statement, so a failure
 * anywhere in it (a duplicate reference, a bad value) stores and allocates nothing; each of its
 * creations then runs alone and meets its own outcome, as do those it found no address for.
 */
export const ORDER_BATCH_MAX = 8;
const ORDER_STATEMENTS_IN_FLIGHT = 1;

/** The batcher of a service context's order creations (OrdersMemory.orderCreations). */
function newOrderCreationBatcher(): KeyedBatcher<OrderCreation, OrderCreationOutcome> {
  return new KeyedBatcher({ maxInFlight: ORDER_STATEMENTS_IN_FLIGHT, maxBatch: ORDER_BATCH_MAX });
}

/** One creation waiting for its statement: the values bound alone, and its metadata as given. */
export interface OrderCreation {
  values: CreateOrderStatementValues;
  metadata: Record<string, unknown>;
}

/** A creation its batch did not serve: it runs alone. */
export const ALONE = Symbol('alone');

export type OrderCreationOutcome = CreatedRow | null | typeof ALONE;
