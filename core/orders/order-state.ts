import { and, eq, inArray, ne, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client';
import { orders, transfers, type ChosenOrderRoute } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { getCheckpoint } from '../chains/checkpoints';
import { emitEvent } from '../events/events';
import { releasePoolAddressFor } from '../pool/allocation';
import { countOrderTransition } from '../platform/metrics';
import { logMoney, tokenAmount } from '../platform/money-log';
import { heldPoolAddresses, presentOrder, tokenUnitsInUsd, type OrderRow, type OrderView } from '../views/order';
import { settleLinkUnit } from './link-units';
import { getConfigValue, getConfigValues } from '../organizations/org-config';

/**
 * The one place that decides an order's status (design.md §4, §8; BTCPay's pattern). Detection
 * only records transfers, stores whether each counts (`counted`, by the order's rule
 * transferCountsTowardOrder, when it is recorded or, not yet credited, moves to another block) and asks for a
 * recompute; the expiry job asks for one when the grace period is over. The decision reads the
 * stored flag and never applies the rule again. Nothing else writes orders.status.
 */

export type OrderStatus = 'pending' | 'completed' | 'expired';

/** What the decision needs of an order. */
export interface OrderFacts {
  status: OrderStatus;
  /** manual: a merchant settled it by hand (resolveOrder), which completes it whatever was paid. */
  resolution?: 'automatic' | 'manual' | null;
  amount: bigint;
  /** Null: a USD order whose route is not chosen yet. */
  chainId: string | null;
  currency: string;
  createdAt: Date;
  graceEndsAt: Date;
}

/** What the decision needs of a transfer. */
export interface TransferFacts {
  id: string;
  chainId: string;
  currency: string;
  amount: bigint;
  /** reorged: confirmed, then deep-reorged; its credit stays (counts as confirmed). */
  status: 'pending' | 'confirmed' | 'dropped' | 'reorged';
  confirmations: number;
  txHash: string;
  logIndex: number;
  blockNumber: number;
  blockTimestamp: Date;
  /** Counts toward the order: stored by the recording (transferCountsTowardOrder), read here as it is. */
  counted: boolean;
  /** Attributed to the order by a merchant's decision (POST /transfers/:id/attribute), not by detection (absent: no). */
  manual?: boolean;
}

/** How far the order's chain has been scanned (null: never). */
export interface CheckpointFacts {
  blockTimestamp: Date;
}

export type PendingReason =
  /** Nothing counted yet, window or grace still open (or the scanner is behind). */
  | 'awaiting_payment'
  /** Counted payments reach the amount but are not all confirmed yet. */
  | 'awaiting_confirmations'
  /** Counted payments (confirmed or not) are below the amount. */
  | 'partially_paid';

export type OrderDecision<T extends TransferFacts = TransferFacts> =
  | { kind: 'final'; status: 'completed' | 'expired'; amountReceived: bigint; confirmedTotal: bigint }
  /** Settled by hand (resolution manual set by resolveOrder): completed with no completing payment of its own. */
  | { kind: 'settle'; status: 'completed'; amountReceived: bigint; confirmedTotal: bigint }
  | { kind: 'pending'; status: 'pending'; amountReceived: bigint; confirmedTotal: bigint; reason: PendingReason }
  | {
      kind: 'complete';
      status: 'completed';
      amountReceived: bigint;
      confirmedTotal: bigint;
      /** manual when a payment attributed by hand is among those that completed it. */
      resolution: 'automatic' | 'manual';
      /** The confirmed transfer that brought the confirmed total to the amount (chain order). */
      completingTransfer: T;
      /** Every counted confirmed transfer: credited to the order. */
      creditedTransferIds: string[];
    }
  | { kind: 'expire'; status: 'expired'; amountReceived: bigint; confirmedTotal: bigint };

/**
 * Whether a transfer attributed to an order counts toward it (design.md §4): same chain, same
 * token currency, and a block time at or before its grace end. Applied by the recording only
 * (core/detection/record-transfer.ts), which stores the answer as `counted`. There is no lower bound here: the
 * attribution (core/detection/attribution.ts) already decided that the payment belongs to the
 * order, including one whose block is stamped before the order's creation because block
 * timestamps lag wall time (the clock-skew rule). Dropped transfers are excluded by the caller's
 * reading (they never count while dropped).
 */
export function transferCountsTowardOrder(order: RoutedOrderFacts & Pick<OrderFacts, 'graceEndsAt'>, transfer: Pick<TransferFacts, 'chainId' | 'currency' | 'blockTimestamp'>): boolean {
  if (!routeOfTransfer(order, transfer)) return false;
  return transfer.blockTimestamp.getTime() <= order.graceEndsAt.getTime();
}

/** What says which tokens on which chains an order accepts: its own (a token order), or the routes it was given (a USD order). */
export type RoutedOrderFacts = Pick<OrderFacts, 'chainId' | 'currency'> & { chosenRoutes?: ChosenOrderRoute[] | null };

/**
 * The routes an order accepts payments on: a token order its one token on its one chain; a USD order
 * every route it was given (core/orders/routes.ts), a payment to an earlier route's address counting
 * in that route's token.
 */
export function acceptedRoutes(order: RoutedOrderFacts): { chainId: string; currency: string; requiredConfirmations?: number }[] {
  if (order.chosenRoutes) return order.chosenRoutes;
  return order.chainId === null ? [] : [{ chainId: order.chainId, currency: order.currency }];
}

/** The accepted route a transfer is on (same chain, same token), if any. */
export function routeOfTransfer<R extends RoutedOrderFacts>(order: R, transfer: Pick<TransferFacts, 'chainId' | 'currency'>) {
  return acceptedRoutes(order).find((r) => r.chainId === transfer.chainId && r.currency === transfer.currency) ?? null;
}

/** Chain order: block, then log index. */
function chainOrder(a: TransferFacts, b: TransferFacts): number {
  if (a.blockNumber !== b.blockNumber) return a.blockNumber - b.blockNumber;
  if (a.logIndex !== b.logIndex) return a.logIndex - b.logIndex;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * Pure: the status an order should have, from its transfers' stored `counted` flags, its chain's
 * checkpoint, the clock and the shortfall its organization tolerates (underpayment_tolerance.*;
 * 0n: none).
 * - completed is final: a completed order is never decided again. expired is final too, except
 *   that a merchant's decision reopens it: a payment attributed by hand that brings it to its
 *   amount, or a settlement by hand, completes it (resolution manual).
 * - settled by hand (resolution manual while not completed): completed.
 * - completed when the confirmed counted total reaches the amount less the tolerated shortfall
 *   (overpayment included; within the shortfall it is completed underpaid).
 * - expired only when now ≥ graceEndsAt, the checkpoint's block time ≥ graceEndsAt (the scanner
 *   has seen everything that could count) and no counted transfer still awaits confirmations.
 * - otherwise pending.
 * Transfers that are dropped or not counted are ignored.
 */
export function decideOrderStatus<T extends TransferFacts>(
  order: OrderFacts,
  countedTransfers: readonly T[],
  checkpoint: CheckpointFacts | null,
  now: Date,
  toleratedShortfall = 0n,
): OrderDecision<T> {
  const live = countedTransfers.filter((t) => t.counted && t.status !== 'dropped');
  const amountReceived = live.reduce((sum, t) => sum + t.amount, 0n);
  const confirmed = live.filter((t) => t.status === 'confirmed' || t.status === 'reorged').sort(chainOrder);
  const confirmedTotal = confirmed.reduce((sum, t) => sum + t.amount, 0n);
  const target = order.amount - (toleratedShortfall > 0n ? (toleratedShortfall < order.amount ? toleratedShortfall : order.amount - 1n) : 0n);

  if (order.status === 'completed') return { kind: 'final', status: order.status, amountReceived, confirmedTotal };
  if (order.resolution === 'manual') return { kind: 'settle', status: 'completed', amountReceived, confirmedTotal };
  const byHand = confirmed.some((t) => t.manual);
  if (order.status === 'expired' && !(byHand && confirmedTotal >= target)) return { kind: 'final', status: order.status, amountReceived, confirmedTotal };

  if (confirmedTotal >= target) {
    let running = 0n;
    let completing = confirmed[confirmed.length - 1];
    for (const t of confirmed) {
      running += t.amount;
      if (running >= target) {
        completing = t;
        break;
      }
    }
    return {
      kind: 'complete',
      status: 'completed',
      amountReceived,
      confirmedTotal,
      resolution: byHand ? 'manual' : 'automatic',
      completingTransfer: completing,
      creditedTransferIds: confirmed.map((t) => t.id),
    };
  }

  const anyPending = live.some((t) => t.status === 'pending');
  const graceOver = now.getTime() >= order.graceEndsAt.getTime();
  const scannedPastGrace = !!checkpoint && checkpoint.blockTimestamp.getTime() >= order.graceEndsAt.getTime();
  if (graceOver && scannedPastGrace && !anyPending) {
    return { kind: 'expire', status: 'expired', amountReceived, confirmedTotal };
  }

  const reason: PendingReason =
    amountReceived === 0n ? 'awaiting_payment' : amountReceived >= order.amount ? 'awaiting_confirmations' : 'partially_paid';
  return { kind: 'pending', status: 'pending', amountReceived, confirmedTotal, reason };
}

/**
 * Fields of the order.completed event data (spec's list plus blockNumber, confirmations,
 * amountReceived, metadata, and the derived amountDue, amountExcess and paymentState).
 */
const COMPLETED_EVENT_FIELDS = [
  'orderId', 'orderReference', 'status', 'amount', 'currency', 'chainId', 'address',
  'txHash', 'blockNumber', 'confirmations', 'amountReceived', 'amountDue', 'amountExcess', 'paymentState', 'completedAt', 'metadata',
  'exceptions', 'resolution', 'resolvedBy', 'resolvedAt', 'resolutionReason',
] as const satisfies readonly (keyof OrderView)[];

/**
 * Added to a USD order's events (a token order's stay as they were): the route its completing payment
 * came by (with the token amount), and every route it was given with what each received.
 */
const USD_ORDER_EVENT_FIELDS = ['routes', 'route', 'chosenRoutes'] as const satisfies readonly (keyof OrderView)[];

/** Fields of the order.expired event data (an underpaid expiry shows as paymentState partial). */
const EXPIRED_EVENT_FIELDS = [
  'orderId', 'orderReference', 'status', 'amount', 'amountReceived', 'amountDue', 'amountExcess', 'paymentState', 'currency', 'chainId',
  'address', 'expiresAt', 'expiredAt', 'metadata',
] as const satisfies readonly (keyof OrderView)[];

export function orderEventData(view: OrderView, fields: readonly (keyof OrderView)[]): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const f of fields) data[f] = view[f] ?? null;
  return data;
}

/**
 * A recorded transfer was re-mined in another block (a reorg, deeper than its confirmations or
 * not): a completed order whose completing transaction it is shows the block it is in now, as the
 * transfer does. The status and the confirmations counted at completion stay as they were.
 */
export async function followMovedTransfer(tx: Tx, ctx: ServiceContext, orderId: string, moved: { txHash: string; blockNumber: number }): Promise<void> {
  await tx
    .update(orders)
    .set({ blockNumber: moved.blockNumber, updatedAt: ctx.clock.now() })
    .where(and(eq(orders.id, orderId), eq(orders.status, 'completed'), eq(orders.txHash, moved.txHash), ne(orders.blockNumber, moved.blockNumber)));
}

/**
 * Recomputes one order inside the caller's transaction and applies the decision idempotently:
 * locks the order row (FOR UPDATE), reads its counted non-dropped transfers and its chain's
 * checkpoint, decides, and on a transition writes the order, credits the confirmed counted
 * transfers (completion), ends the address assignment (cooldown of address_pool.cooldown_minutes)
 * and emits order.completed / order.expired, all in this transaction. Calling it again, from any
 * number of workers, changes nothing more. A final order keeps its status; only its
 * amountReceived follows later-counted or dropped transfers.
 * Returns the order's status after the call.
 */
export async function recomputeOrder(tx: Tx, ctx: ServiceContext, orderId: string): Promise<'pending' | 'completed' | 'expired'> {
  const [order] = await tx.select().from(orders).where(eq(orders.id, orderId)).for('update');
  if (!order) throw new Error(`recomputeOrder: order ${orderId} does not exist`);

  const countedInToken = await tx
    .select({
      id: transfers.id,
      chainId: transfers.chainId,
      currency: transfers.currency,
      amount: transfers.amount,
      status: transfers.status,
      confirmations: transfers.confirmations,
      txHash: transfers.txHash,
      logIndex: transfers.logIndex,
      blockNumber: transfers.blockNumber,
      blockTimestamp: transfers.blockTimestamp,
      counted: transfers.counted,
      manual: sql<boolean>`${transfers.attributedBy} is not null`,
    })
    .from(transfers)
    .where(and(eq(transfers.orderId, orderId), eq(transfers.counted, true), ne(transfers.status, 'dropped')));
  const checkpoint = await checkpointOfRoutes(tx, ctx, order);
  const now = ctx.clock.now();
  // A USD order counts every route's payments in USD units (exact: core/orders/routes.ts).
  const counted = order.chosenRoutes ? inUsdUnits(ctx, countedInToken) : countedInToken;
  let decision = decideOrderStatus(order, counted, checkpoint, now);
  // Short of its amount with something confirmed: does the organization tolerate the shortfall?
  // Read only then (a partial payment is rare; a full one never pays for the query).
  if ((decision.kind === 'pending' || decision.kind === 'final') && order.status !== 'completed' && decision.confirmedTotal > 0n && decision.confirmedTotal < order.amount) {
    const shortfall = await toleratedShortfall(tx, ctx, order);
    if (shortfall > 0n) decision = decideOrderStatus(order, counted, checkpoint, now, shortfall);
  }

  switch (decision.kind) {
    case 'final':
    case 'pending': {
      const routes = routesReceived(order, countedInToken);
      if (decision.amountReceived !== order.amountReceived || routes !== order.chosenRoutes) {
        await tx.update(orders).set({ amountReceived: decision.amountReceived, chosenRoutes: routes, updatedAt: now }).where(eq(orders.id, orderId));
      }
      return decision.status;
    }
    case 'complete': {
      const t = decision.completingTransfer;
      // By hand: who attributed the payment that completed it, and why (the transfer keeps it too).
      const [byHand] =
        decision.resolution === 'manual'
          ? await tx
              .select({ by: transfers.attributedBy, at: transfers.attributedAt, reason: transfers.attributionReason })
              .from(transfers)
              .where(and(inArray(transfers.id, decision.creditedTransferIds), sql`${transfers.attributedBy} is not null`))
              .orderBy(sql`${transfers.attributedAt} desc`)
              .limit(1)
          : [];
      const [updated] = await tx
        .update(orders)
        .set({
          status: 'completed',
          amountReceived: decision.amountReceived,
          chosenRoutes: routesReceived(order, countedInToken),
          // A USD order's route is the one its completing payment came by.
          ...currentRoute(order, t),
          txHash: t.txHash,
          blockNumber: t.blockNumber,
          confirmations: t.confirmations,
          completedAt: now,
          updatedAt: now,
          resolution: decision.resolution,
          ...(byHand ? { resolvedBy: byHand.by, resolvedAt: byHand.at ?? now, resolutionReason: byHand.reason } : {}),
        })
        .where(and(eq(orders.id, orderId), inArray(orders.status, ['pending', 'expired'])))
        .returning();
      await tx
        .update(transfers)
        .set({ credited: true })
        .where(and(inArray(transfers.id, decision.creditedTransferIds), eq(transfers.orderId, orderId), inArray(transfers.status, ['confirmed', 'reorged'])));
      await finishOrder(tx, ctx, updated, now, 'order.completed', COMPLETED_EVENT_FIELDS, order.status);
      return 'completed';
    }
    case 'settle': {
      // resolveOrder wrote who, when and why; the decision completes it.
      const [updated] = await tx
        .update(orders)
        .set({ status: 'completed', amountReceived: decision.amountReceived, chosenRoutes: routesReceived(order, countedInToken), completedAt: now, updatedAt: now })
        .where(and(eq(orders.id, orderId), inArray(orders.status, ['pending', 'expired'])))
        .returning();
      await tx
        .update(transfers)
        .set({ credited: true })
        .where(and(eq(transfers.orderId, orderId), eq(transfers.counted, true), inArray(transfers.status, ['confirmed', 'reorged'])));
      await finishOrder(tx, ctx, updated, now, 'order.completed', COMPLETED_EVENT_FIELDS, order.status);
      return 'completed';
    }
    case 'expire': {
      // A late-payment window (late_payment_window_minutes): payments to the address until it ends are
      // recorded against the order (paid_late) and the address stays out of the pool, watched.
      const lateMinutes = Number(await getConfigValue(tx, order.organizationId, 'late_payment_window_minutes')) || 0;
      const lateWindowEndsAt = lateMinutes > 0 ? new Date(order.graceEndsAt.getTime() + lateMinutes * 60_000) : null;
      const [updated] = await tx
        .update(orders)
        .set({ status: 'expired', amountReceived: decision.amountReceived, chosenRoutes: routesReceived(order, countedInToken), expiredAt: now, updatedAt: now, lateWindowEndsAt })
        .where(and(eq(orders.id, orderId), eq(orders.status, 'pending')))
        .returning();
      await finishOrder(tx, ctx, updated, now, 'order.expired', EXPIRED_EVENT_FIELDS, order.status);
      return 'expired';
    }
  }
}

/**
 * How far the chains the order accepts payments on have been scanned: the least scanned of its
 * routes' chains (null when one never was). A USD order with no route chosen has no address, so
 * nothing can still arrive for it: scanned as of now.
 */
async function checkpointOfRoutes(tx: Tx, ctx: ServiceContext, order: OrderRow): Promise<CheckpointFacts | null> {
  const chains = [...new Set(acceptedRoutes(order).map((r) => r.chainId))];
  if (chains.length === 0) return { blockTimestamp: ctx.clock.now() };
  let least: CheckpointFacts | null = null;
  for (const chainId of chains) {
    const checkpoint = await getCheckpoint(tx, chainId);
    if (!checkpoint) return null;
    if (!least || checkpoint.blockTimestamp.getTime() < least.blockTimestamp.getTime()) least = checkpoint;
  }
  return least;
}

/** Transfers' amounts in USD base units (a USD order's decision compares them with its USD amount). */
export function inUsdUnits<T extends TransferFacts>(ctx: Pick<ServiceContext, 'registry'>, counted: readonly T[]): T[] {
  return counted.map((t) => ({ ...t, amount: tokenUnitsInUsd(t.amount, ctx.registry.tokenDecimals(t.chainId, t.currency)) }));
}

/**
 * A USD order's chosen routes with what each received (counted, not dropped, in its token); the same
 * array when nothing changed (and null for a token order), so an unchanged order is not written.
 */
function routesReceived(order: OrderRow, counted: readonly TransferFacts[]): ChosenOrderRoute[] | null {
  if (!order.chosenRoutes) return order.chosenRoutes;
  const live = counted.filter((t) => t.counted && t.status !== 'dropped');
  const routes = order.chosenRoutes.map((r) => ({
    ...r,
    received: live.filter((t) => t.chainId === r.chainId && t.currency === r.currency).reduce((sum, t) => sum + t.amount, 0n).toString(),
  }));
  return routes.every((r, i) => r.received === order.chosenRoutes![i].received) ? order.chosenRoutes : routes;
}

/** A USD order's current route set to the one a transfer came by (nothing for a token order). */
function currentRoute(order: OrderRow, t: Pick<TransferFacts, 'chainId' | 'currency'>): Partial<OrderRow> {
  const route = order.chosenRoutes?.find((r) => r.chainId === t.chainId && r.currency === t.currency);
  if (!route) return {};
  return { chainId: route.chainId, protocol: route.protocol, address: route.address, poolAddressId: route.poolAddressId, routeCurrency: route.currency, requiredConfirmations: route.requiredConfirmations };
}

/**
 * The shortfall an order's organization tolerates (underpayment_tolerance.percent and .amount, in
 * the order's token; the larger of the two), in base units; 0n when both are off.
 */
async function toleratedShortfall(tx: Tx, ctx: ServiceContext, order: OrderRow): Promise<bigint> {
  const values = await getConfigValues(tx, order.organizationId, ['underpayment_tolerance.percent', 'underpayment_tolerance.amount']);
  const decimals = ctx.registry.tokenDecimals(order.chainId, order.currency);
  const percent = values.get('underpayment_tolerance.percent');
  const absolute = values.get('underpayment_tolerance.amount');
  // percent has at most 4 decimals: amount × percent × 10^4 / (100 × 10^4), rounded down.
  const ofPercent = typeof percent === 'string' ? (order.amount * truncatedUnits(percent, 4)) / 1_000_000n : 0n;
  const ofAmount = typeof absolute === 'string' ? truncatedUnits(absolute, decimals) : 0n;
  return ofPercent > ofAmount ? ofPercent : ofAmount;
}

/** A stored decimal setting (validated: digits, one dot) in base units of `decimals`, extra digits cut off (never rounded up). */
function truncatedUnits(text: string, decimals: number): bigint {
  const [whole, fraction = ''] = text.split('.');
  return BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.slice(0, decimals).padEnd(decimals, '0') || '0');
}

/**
 * The address goes to cooldown, the unit of the payment link the order was made from (if any) is
 * sold or returned, and the event is written, in the transition's transaction.
 */
async function finishOrder(
  tx: Tx,
  ctx: ServiceContext,
  order: OrderRow,
  now: Date,
  type: 'order.completed' | 'order.expired',
  fields: readonly (keyof OrderView)[],
  before: OrderStatus,
): Promise<void> {
  if (before === 'pending') {
    // The late window keeps the address out of the pool (and watched) until it ends.
    const lateSeconds = order.lateWindowEndsAt ? Math.ceil((order.lateWindowEndsAt.getTime() - now.getTime()) / 1000) : 0;
    // Every address it held (a USD order: one per family it was given a route of; none if it never chose).
    for (const held of heldPoolAddresses(order)) {
      await releasePoolAddressFor(tx, {
        poolAddressId: held.poolAddressId,
        organizationId: order.organizationId,
        reason: 'order',
        now,
        minimumCooldownSeconds: Math.max(ctx.registry.minimumCooldownSeconds(held.protocol), lateSeconds),
      });
    }
    // An expired order completed by hand later has already returned its link unit: the merchant's
    // decision does not take one back from the link's stock.
    await settleLinkUnit(tx, order, type === 'order.completed' ? 'completed' : 'expired');
  }
  countOrderTransition(type === 'order.completed' ? 'completed' : 'expired');
  logMoney(ctx.logger, type === 'order.completed' ? 'order completed' : 'order expired', {
    orderId: order.id,
    organizationId: order.organizationId,
    orderReference: order.orderReference,
    chainId: order.chainId,
    currency: order.currency,
    amount: tokenAmount(ctx.registry, order.chainId, order.currency, order.amount),
    amountReceived: tokenAmount(ctx.registry, order.chainId, order.currency, order.amountReceived),
    address: order.address,
    txHash: order.txHash,
  });
  await emitEvent(tx, {
    organizationId: order.organizationId,
    type,
    data: orderEventData(presentOrder(ctx, order), order.routes ? [...fields, ...USD_ORDER_EVENT_FIELDS] : fields),
    createdAt: now,
  });
}
