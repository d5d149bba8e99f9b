import { eq } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { depositBindings, deposits, transfers } from '../../db/schema';
import { formatAmount } from '../platform/amounts';
import type { ChainRegistry } from '../chains/registry';
import { tokenDecimals } from './totals';
import type { DepositRecord, DepositStatus } from '../views/deposit';

/** The columns every deposit read selects (lists and single rows alike). */
export const depositColumns = {
  depositId: deposits.id,
  organizationId: deposits.organizationId,
  bindingId: deposits.bindingId,
  transferId: deposits.transferId,
  depositReference: deposits.depositReference,
  status: deposits.status,
  requiredConfirmations: deposits.requiredConfirmations,
  detectedAt: deposits.detectedAt,
  confirmedAt: deposits.confirmedAt,
  completedAt: deposits.completedAt,
  droppedAt: deposits.droppedAt,
  protocol: transfers.protocol,
  chainId: transfers.chainId,
  currency: transfers.currency,
  units: transfers.amount,
  address: transfers.toAddress,
  fromAddress: transfers.fromAddress,
  txHash: transfers.txHash,
  logIndex: transfers.logIndex,
  blockNumber: transfers.blockNumber,
  blockTimestamp: transfers.blockTimestamp,
  confirmations: transfers.confirmations,
  metadata: depositBindings.metadata,
};

export type DepositRow = Awaited<ReturnType<typeof selectDeposits>>[number];

export function depositFrom(registry: ChainRegistry, row: DepositRow): DepositRecord {
  const { units, ...rest } = row;
  return {
    ...rest,
    status: row.status as DepositStatus,
    amount: formatAmount(units, tokenDecimals(registry, row.chainId, row.currency)),
    metadata: (row.metadata ?? {}) as Record<string, unknown>,
  };
}

/** Deposits joined with their transfer and binding; callers add the where clause. */
export function selectDeposits(db: DbOrTx) {
  return db
    .select(depositColumns)
    .from(deposits)
    .innerJoin(transfers, eq(transfers.id, deposits.transferId))
    .innerJoin(depositBindings, eq(depositBindings.id, deposits.bindingId));
}
