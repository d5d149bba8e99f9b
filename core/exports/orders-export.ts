import { and, asc, sql } from 'drizzle-orm';
import { orders, transfers } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { orderFilterConditions, type OrderFilters } from '../orders/orders';
import { presentOrder, type OrderRow } from '../views/order';
import { openCsvDownload, type CsvDownload } from './csv-download';
import { withinPeriod, type ExportPeriod } from './period';

export const ORDER_EXPORT_COLUMNS = [
  'orderId', 'orderReference', 'status', 'paymentState', 'amount', 'amountReceived', 'currency', 'chainId', 'address',
  'txHash', 'blockNumber', 'blockTimestamp', 'createdAt', 'expiresAt', 'completedAt', 'expiredAt',
  'exceptions', 'resolution', 'resolvedBy', 'resolvedAt', 'resolutionReason',
] as const;

type ExportedOrder = { order: OrderRow; blockTimestamp: Date | null };

/**
 * The organization's orders created in the period that pass GET /orders' filters, oldest first
 * ((created_at, id): the list's index), as CSV. Amounts are the presenter's exact decimal strings.
 */
export async function exportOrders(
  ctx: Pick<ServiceContext, 'db' | 'registry' | 'config'>,
  organizationId: string,
  filters: OrderFilters,
  period: ExportPeriod,
): Promise<CsvDownload> {
  const where = and(...orderFilterConditions(organizationId, filters), ...withinPeriod(orders.createdAt, period));
  // The block time of the transaction that completed the order (orders keep its hash, not its time).
  // Spelled out: drizzle leaves the table off every column of a one-table select, and the
  // correlated subquery would then compare the transfer's own columns with themselves.
  const completingBlockTime = sql
    .raw(
      `case when orders.tx_hash is null then null else (select paying.block_timestamp from transfers paying
       where paying.order_id = orders.id and paying.tx_hash = orders.tx_hash order by paying.block_timestamp limit 1) end`,
    )
    .mapWith(transfers.blockTimestamp);
  return openCsvDownload<ExportedOrder>({
    fileName: 'orders.csv',
    header: ORDER_EXPORT_COLUMNS,
    readBatch: (after, limit) =>
      ctx.db
        .select({ order: orders, blockTimestamp: completingBlockTime })
        .from(orders)
        .where(after ? and(where, sql`(${orders.createdAt}, ${orders.id}) > (select ${orders.createdAt}, ${orders.id} from ${orders} where ${orders.id} = ${after.order.id})`) : where)
        .orderBy(asc(orders.createdAt), asc(orders.id))
        .limit(limit),
    cells: ({ order, blockTimestamp }) => {
      const o = presentOrder(ctx, order);
      return [
        o.orderId, o.orderReference, o.status, o.paymentState, o.amount, o.amountReceived, o.currency, o.chainId, o.address,
        o.txHash, o.blockNumber, blockTimestamp?.toISOString(), o.createdAt, o.expiresAt, o.completedAt, o.expiredAt,
        // Several in one cell, space-separated (e.g. "underpaid manual"), as ?exception= names them.
        o.exceptions.join(' '), o.resolution, o.resolvedBy, o.resolvedAt, o.resolutionReason,
      ];
    },
  });
}
