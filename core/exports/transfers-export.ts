import { and, asc, sql } from 'drizzle-orm';
import { transfers } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { selectTransfers, transferFilterConditions, type TransferFilters, type TransferRecord } from '../transfers/transfers';
import { presentTransfer } from '../views/transfer';
import { openCsvDownload, type CsvDownload } from './csv-download';
import { withinPeriod, type ExportPeriod } from './period';

export const TRANSFER_EXPORT_COLUMNS = [
  'transferId', 'status', 'amount', 'currency', 'chainId', 'from', 'to', 'txHash', 'blockNumber', 'blockTimestamp', 'confirmations',
  'attribution', 'orderId', 'orderReference', 'depositId', 'depositReference', 'unattributedReason', 'credited', 'detectedAt', 'confirmedAt',
] as const;

/**
 * The organization's transfers detected in the period that pass GET /transfers' filters, oldest
 * first ((detected_at, id): the list's index), as CSV.
 */
export async function exportTransfers(
  ctx: Pick<ServiceContext, 'db' | 'registry'>,
  organizationId: string,
  filters: TransferFilters,
  period: ExportPeriod,
): Promise<CsvDownload> {
  const where = and(...transferFilterConditions(organizationId, filters), ...withinPeriod(transfers.detectedAt, period));
  return openCsvDownload<TransferRecord>({
    fileName: 'transfers.csv',
    header: TRANSFER_EXPORT_COLUMNS,
    readBatch: (after, limit) =>
      selectTransfers(ctx.db)
        .where(after ? and(where, sql`(${transfers.detectedAt}, ${transfers.id}) > (select ${transfers.detectedAt}, ${transfers.id} from ${transfers} where ${transfers.id} = ${after.t.id})`) : where)
        .orderBy(asc(transfers.detectedAt), asc(transfers.id))
        .limit(limit),
    cells: (record) => {
      const t = presentTransfer(ctx.registry, record);
      return [
        t.id, t.status, t.amount, t.currency, t.chainId, t.from, t.to, t.txHash, t.blockNumber, t.blockTimestamp, t.confirmations,
        t.attribution, t.orderId, t.orderReference, t.depositId, t.depositReference, t.unattributedReason, t.credited, t.detectedAt, t.confirmedAt,
      ];
    },
  });
}
