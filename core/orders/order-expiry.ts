import { and, asc, eq, gte, lte, sql } from 'drizzle-orm';
import { chainCheckpoints, orders } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { recomputeOrder } from './order-state';

export interface ExpiryRunResult {
  /** Pending orders past graceEndsAt on a chain scanned past it, recomputed in this run. */
  examined: number;
  expired: number;
  failed: number;
}

/**
 * The expiry job's work: finds pending orders whose grace period is over and whose chain was
 * scanned past it, and asks the order state function about each (it alone decides; an order with a
 * payment awaiting confirmations stays pending). Batches are claimed with FOR UPDATE SKIP LOCKED,
 * so concurrent runs share the work instead of waiting; recomputeOrder is idempotent under the row
 * lock, so overlapping runs still emit one order.expired. Each order runs in its own savepoint: one
 * failing order is logged and reported (the run fails after the batch commits) without holding up
 * the others.
 */
export async function expireDueOrders(ctx: ServiceContext, options: { batchSize?: number; maxBatches?: number } = {}): Promise<ExpiryRunResult> {
  const batchSize = options.batchSize ?? 100;
  const maxBatches = options.maxBatches ?? 50;
  const now = ctx.clock.now();
  const result: ExpiryRunResult = { examined: 0, expired: 0, failed: 0 };
  const failures: unknown[] = [];
  // Keyset cursor: orders that stay pending are not looked at twice in one run.
  let cursor: { graceEndsAt: Date; id: string } | null = null;

  for (let batch = 0; batch < maxBatches; batch++) {
    const after: { graceEndsAt: Date; id: string } | null = cursor;
    type Claimed = { id: string; graceEndsAt: Date };
    const claimed: Claimed[] = await ctx.db.transaction(async (tx): Promise<Claimed[]> => {
      const rows: Claimed[] = await tx
        .select({ id: orders.id, graceEndsAt: orders.graceEndsAt })
        .from(orders)
        .innerJoin(chainCheckpoints, eq(chainCheckpoints.chainId, orders.chainId))
        .where(
          and(
            // A literal, not a parameter: generic plans then still use the partial index orders_pending_grace_idx.
            sql`${orders.status} = 'pending'`,
            lte(orders.graceEndsAt, now),
            gte(chainCheckpoints.blockTimestamp, orders.graceEndsAt),
            after ? sql`(${orders.graceEndsAt}, ${orders.id}) > (${after.graceEndsAt.toISOString()}::timestamptz, ${after.id})` : undefined,
          ),
        )
        .orderBy(asc(orders.graceEndsAt), asc(orders.id))
        .limit(batchSize)
        .for('update', { of: orders, skipLocked: true });
      for (const row of rows) {
        try {
          const status = await tx.transaction((sp) => recomputeOrder(sp, ctx, row.id));
          result.examined += 1;
          if (status === 'expired') result.expired += 1;
        } catch (err) {
          result.failed += 1;
          failures.push(err);
          ctx.logger.error({ err, orderId: row.id }, 'order expiry: recompute failed');
        }
      }
      return rows;
    });
    if (claimed.length < batchSize) break;
    cursor = claimed[claimed.length - 1];
  }

  if (failures.length > 0) {
    throw new AggregateError(failures, `order expiry: ${failures.length} order(s) could not be recomputed (${result.expired} expired)`);
  }
  return result;
}
