import { and, eq } from 'drizzle-orm';
import { orders } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { AppError, notFound, validationError } from '../platform/errors';
import { recomputeOrder } from '../orders/order-state';
import type { OrderRow } from '../views/order';
import { logMoney, tokenAmount } from '../platform/money-log';
import { auditAction, type Actor } from './actor';

/**
 * A merchant settles an order by hand (issue 40; BTCPay's "mark settled"): paid off-chain, or
 * outside its window in a way the service could not attribute. POST /orders/:id/resolve and the
 * dashboard's button, one operation, one transaction: who, when and why are written on the order
 * (resolution manual) and its one decision (order-state.ts) completes it, emitting order.completed
 * with resolution "manual". A completed order is 409: one completed by its payments is never
 * re-decided, and settling twice changes nothing.
 */
export async function resolveOrder(ctx: ServiceContext, actor: Actor, orderId: string, input: { status: 'completed'; reason: string }): Promise<OrderRow> {
  const why = input.reason.trim();
  if (why === '') throw validationError('reason must say why the order is settled by hand', [{ field: 'reason', message: 'must not be empty' }]);
  return ctx.db.transaction(async (tx) => {
    const [order] = await tx
      .select()
      .from(orders)
      .where(and(eq(orders.id, orderId), eq(orders.organizationId, actor.organizationId)))
      .for('update');
    if (!order) throw notFound('Order');
    if (order.status === 'completed') {
      throw new AppError(
        'CONFLICT',
        order.resolution === 'manual'
          ? `Order ${orderId} was already completed by hand (by ${order.resolvedBy})`
          : `Order ${orderId} was already completed by its payments: there is nothing to settle`,
      );
    }
    const now = ctx.clock.now();
    await tx.update(orders).set({ resolution: 'manual', resolvedBy: actor.name, resolvedAt: now, resolutionReason: why, updatedAt: now }).where(eq(orders.id, orderId));
    await recomputeOrder(tx, ctx, orderId);
    await auditAction(tx, actor, 'order.resolved', orderId, { status: input.status, reason: why, previousStatus: order.status });
    logMoney(ctx.logger, 'order settled by hand', {
      orderId,
      organizationId: actor.organizationId,
      by: actor.name,
      reason: why,
      previousStatus: order.status,
      amount: tokenAmount(ctx.registry, order.chainId, order.currency, order.amount),
      amountReceived: tokenAmount(ctx.registry, order.chainId, order.currency, order.amountReceived),
    });
    const [settled] = await tx.select().from(orders).where(eq(orders.id, orderId));
    return settled;
  });
}
