import { eq, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client';
import { paymentLinks } from '../../db/schema';
import { validationError } from '../platform/errors';
import type { OrderRow } from '../views/order';

/**
 * A payment link's units, as orders made from it hold them. Which link an order was made from is
 * its payment_link_id column, set only by checkout (createOrder's `fromLink`), never read from
 * metadata:
 * - taking: the order's insert takes one unit, or fails whole (sold out, too many open orders,
 *   link not active), by the trigger payment_link_take_unit (db/migrations/0018_order_payment_link.sql),
 *   because the insert is a single batched statement with no transaction around it and must decide
 *   against concurrent checkouts in other processes;
 * - settling: leaving pending sells the unit (completed) or returns it (expired), here, in the
 *   transaction of the transition (finishOrder, core/orders/order-state.ts).
 */

/** The metadata key a checkout order carries its link's id under: information, not authority. */
export const PAYMENT_LINK_ID_KEY = 'paymentLinkId';

/** POST /orders may not set the key: it would read as made from the link without being so. */
export function assertNoLinkClaim(metadata: Record<string, unknown> | undefined): void {
  if (metadata && Object.hasOwn(metadata, PAYMENT_LINK_ID_KEY)) {
    const message = 'is set by the service on orders made from a payment link';
    throw validationError(`metadata.${PAYMENT_LINK_ID_KEY} ${message}`, [{ field: `metadata.${PAYMENT_LINK_ID_KEY}`, message }]);
  }
}

/** The order's reserved unit, as it leaves pending: sold when completed, returned when expired. */
export async function settleLinkUnit(tx: Tx, order: Pick<OrderRow, 'paymentLinkId'>, outcome: 'completed' | 'expired'): Promise<void> {
  if (order.paymentLinkId === null) return;
  await tx
    .update(paymentLinks)
    .set({
      inventoryReserved: sql`${paymentLinks.inventoryReserved} - 1`,
      ...(outcome === 'completed' ? { inventorySold: sql`${paymentLinks.inventorySold} + 1` } : {}),
    })
    .where(eq(paymentLinks.id, order.paymentLinkId));
}
