import { and, asc, sql } from 'drizzle-orm';
import { deposits } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { depositFilterCondition, type DepositFilters } from '../deposits/queries';
import { depositFrom, selectDeposits, type DepositRow } from '../deposits/records';
import { presentDeposit } from '../views/deposit';
import { openCsvDownload, type CsvDownload } from './csv-download';
import { withinPeriod, type ExportPeriod } from './period';

export const DEPOSIT_EXPORT_COLUMNS = [
  'depositId', 'depositReference', 'status', 'amount', 'currency', 'chainId', 'address', 'fromAddress', 'txHash', 'blockNumber', 'blockTimestamp',
  'confirmations', 'transferId', 'detectedAt', 'confirmedAt', 'completedAt', 'droppedAt',
] as const;

/**
 * The organization's deposits detected in the period that pass GET /deposits' filters, oldest
 * first ((detected_at, id)), as CSV.
 */
export async function exportDeposits(
  ctx: Pick<ServiceContext, 'db' | 'registry'>,
  organizationId: string,
  filters: DepositFilters,
  period: ExportPeriod,
): Promise<CsvDownload> {
  const where = and(depositFilterCondition(organizationId, filters), ...withinPeriod(deposits.detectedAt, period));
  return openCsvDownload<DepositRow>({
    fileName: 'deposits.csv',
    header: DEPOSIT_EXPORT_COLUMNS,
    readBatch: (after, limit) =>
      selectDeposits(ctx.db)
        .where(after ? and(where, sql`(${deposits.detectedAt}, ${deposits.id}) > (select ${deposits.detectedAt}, ${deposits.id} from ${deposits} where ${deposits.id} = ${after.depositId})`) : where)
        .orderBy(asc(deposits.detectedAt), asc(deposits.id))
        .limit(limit),
    cells: (row) => {
      const d = presentDeposit(depositFrom(ctx.registry, row));
      return [
        d.depositId, d.depositReference, d.status, d.amount, d.currency, d.chainId, d.address, d.fromAddress, d.txHash, d.blockNumber,
        row.blockTimestamp.toISOString(), d.confirmations, d.transferId, d.detectedAt, d.confirmedAt, d.completedAt, d.droppedAt,
      ];
    },
  });
}
