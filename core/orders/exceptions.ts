import { and, eq, inArray, isNull, ne, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client';
import { orders, transfers, type StoredTransferCandidate } from '../../db/schema';
import type { ChainRegistry } from '../chains/registry';
import { formatAmount } from '../platform/amounts';
import { heldPoolAddresses, presentOrder, type OrderException, type OrderRow, type OrderView, type UnattributedPaymentView } from '../views/order';
import type { ServiceContext } from '../service/context';
import type { UnattributedReason } from '../transfers/transfers';

/**
 * An order's exceptions as the recording and the attribute action keep them (issue 40): the
 * payments seen after its grace (late_paid_at) and the unattributed transfers that name it
 * (unattributed_payments). What they mean on the wire is core/views/order.ts orderExceptions.
 */

/** The orders an unattributed transfer names, counted once per transfer; the late ones also mark paidLate. */
export async function noteUnattributedPayments(tx: Tx, named: { orderIds: string[]; lateOrderId: string | null }[], now: Date): Promise<void> {
  const counts = new Map<string, number>();
  for (const n of named) for (const id of new Set(n.orderIds)) counts.set(id, (counts.get(id) ?? 0) + 1);
  for (const [orderId, n] of counts) {
    await tx.update(orders).set({ unattributedPayments: sql`${orders.unattributedPayments} + ${n}` }).where(eq(orders.id, orderId));
  }
  const late = [...new Set(named.map((n) => n.lateOrderId).filter((id): id is string => id !== null))];
  if (late.length > 0) await tx.update(orders).set({ latePaidAt: now }).where(and(inArray(orders.id, late), isNull(orders.latePaidAt)));
}

/** A payment attributed to the order but mined after its grace (not counted): paidLate. */
export async function noteLatePayment(tx: Tx, orderId: string, now: Date): Promise<void> {
  await tx.update(orders).set({ latePaidAt: now }).where(and(eq(orders.id, orderId), isNull(orders.latePaidAt)));
}

/** A transfer that named these orders is attributed now: they no longer count it (never below zero). */
export async function forgetUnattributedPayment(tx: Tx, orderIds: string[]): Promise<void> {
  const ids = [...new Set(orderIds)];
  if (ids.length === 0) return;
  await tx
    .update(orders)
    .set({ unattributedPayments: sql`greatest(${orders.unattributedPayments} - 1, 0)` })
    .where(inArray(orders.id, ids));
}

/** The orders a stored candidate list names. */
export function candidateOrderIds(candidates: readonly StoredTransferCandidate[] | null): string[] {
  return [...new Set((candidates ?? []).map((c) => c.orderId).filter((id): id is string => id !== null))];
}

/** orderExceptions's rule (core/views/order.ts) as a condition on the orders table (the list filter ?exception=). */
export function exceptionCondition(exception: OrderException): SQL {
  switch (exception) {
    case 'underpaid':
      return sql`(${orders.status} = 'completed' and ${orders.amountReceived} > 0 and ${orders.amountReceived} < ${orders.amount})`;
    case 'overpaid':
      return sql`${orders.amountReceived} > ${orders.amount}`;
    case 'paidLate':
      return sql`${orders.latePaidAt} is not null`;
    case 'unattributedPayments':
      return sql`${orders.unattributedPayments} > 0`;
    case 'manual':
      return sql`${orders.resolution} = 'manual'`;
  }
}


/**
 * The transfers into some orders' addresses, still unattributed, that name them as a candidate
 * (their views' unattributedPayments), by order id. One query, and none at all for orders whose
 * counter says there are none (nearly all).
 */
export async function unattributedPaymentsOf(db: DbOrTx, registry: ChainRegistry, rows: readonly OrderRow[]): Promise<Map<string, UnattributedPaymentView[]>> {
  const out = new Map<string, UnattributedPaymentView[]>();
  const asked = rows.filter((o) => o.unattributedPayments > 0);
  if (asked.length === 0) return out;
  const found = await db
    .select({
      id: transfers.id,
      poolAddressId: transfers.poolAddressId,
      reason: transfers.unattributedReason,
      candidates: transfers.unattributedCandidates,
      amount: transfers.amount,
      currency: transfers.currency,
      chainId: transfers.chainId,
      txHash: transfers.txHash,
      from: transfers.fromAddress,
      blockTimestamp: transfers.blockTimestamp,
    })
    .from(transfers)
    .where(
      and(
        inArray(transfers.poolAddressId, [...new Set(asked.flatMap((o) => heldPoolAddresses(o).map((h) => h.poolAddressId)))]),
        isNull(transfers.orderId),
        isNull(transfers.depositBindingId),
        ne(transfers.status, 'dropped'),
        sql`${transfers.unattributedCandidates} @> any(${sql.param(asked.map((o) => JSON.stringify([{ orderId: o.id }])))}::jsonb[])`,
      ),
    )
    .orderBy(transfers.detectedAt, transfers.id);
  for (const order of asked) {
    const held = new Set(heldPoolAddresses(order).map((h) => h.poolAddressId));
    const mine = found.filter((r) => r.poolAddressId !== null && held.has(r.poolAddressId) && r.candidates?.some((c) => c.orderId === order.id));
    out.set(
      order.id,
      mine.map((r) => ({
        transferId: r.id,
        reason: (r.reason ?? 'no_holder') as UnattributedReason,
        relation: r.candidates!.find((c) => c.orderId === order.id)!.relation,
        amount: formatAmount(r.amount, registry.tokenDecimals(r.chainId, r.currency)),
        currency: r.currency,
        chainId: r.chainId,
        txHash: r.txHash,
        from: r.from,
        blockTimestamp: r.blockTimestamp.toISOString(),
      })),
    );
  }
  return out;
}

/** Orders' views with their unattributed payments (API answers and the dashboard; webhook events leave them out). */
export async function presentOrdersWithPayments(ctx: Pick<ServiceContext, 'db' | 'registry' | 'config'>, rows: readonly OrderRow[]): Promise<OrderView[]> {
  const payments = await unattributedPaymentsOf(ctx.db, ctx.registry, rows);
  return rows.map((o) => presentOrder(ctx, o, payments.get(o.id) ?? []));
}

/** One order's view with its unattributed payments. */
export async function presentOrderWithPayments(ctx: Pick<ServiceContext, 'db' | 'registry' | 'config'>, order: OrderRow): Promise<OrderView> {
  return (await presentOrdersWithPayments(ctx, [order]))[0];
}
