import { eq } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { depositBindings, deposits, transfers } from '../../db/schema';
import { formatAmount } from '../platform/amounts';
import type { ChainRegistry } from '../chains/registry';
import { tokenDecimals } from './totals';

/**
 * A deposit as the domain hands it out: the deposit row joined with its transfer (chain facts)
 * and its binding (metadata). Amount is a decimal string in token units.
 */
export type DepositStatus = 'pending' | 'confirmed' | 'completed' | 'dropped';
export const DEPOSIT_STATUSES: readonly DepositStatus[] = ['pending', 'confirmed', 'completed', 'dropped'];

export interface DepositRecord {
  depositId: string;
  organizationId: string;
  bindingId: string;
  transferId: string;
  depositReference: string;
  protocol: string;
  chainId: string;
  currency: string;
  amount: string;
  address: string;
  fromAddress: string;
  txHash: string;
  logIndex: number;
  blockNumber: number;
  status: DepositStatus;
  confirmations: number;
  requiredConfirmations: number;
  metadata: Record<string, unknown>;
  detectedAt: Date;
  confirmedAt: Date | null;
  completedAt: Date | null;
  droppedAt: Date | null;
}

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

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * The one wire object of a deposit (API answers and event data alike): both `depositId` and
 * `id`, both `chainId` and `chain` (design.md §4a).
 */
export function presentDeposit(d: DepositRecord) {
  return {
    depositId: d.depositId,
    id: d.depositId,
    depositReference: d.depositReference,
    amount: d.amount,
    currency: d.currency,
    chainId: d.chainId,
    chain: d.chainId,
    protocol: d.protocol,
    address: d.address,
    fromAddress: d.fromAddress,
    txHash: d.txHash,
    logIndex: d.logIndex,
    blockNumber: d.blockNumber,
    status: d.status,
    confirmations: d.confirmations,
    requiredConfirmations: d.requiredConfirmations,
    transferId: d.transferId,
    detectedAt: d.detectedAt.toISOString(),
    confirmedAt: iso(d.confirmedAt),
    completedAt: iso(d.completedAt),
    droppedAt: iso(d.droppedAt),
    metadata: d.metadata,
  };
}

/** Fields of deposit.pending / deposit.confirmed data, taken from the deposit's wire object. */
const DEPOSIT_EVENT_FIELDS = [
  'depositId', 'depositReference', 'amount', 'currency', 'chainId', 'chain', 'protocol', 'address',
  'txHash', 'logIndex', 'blockNumber', 'confirmations', 'requiredConfirmations', 'status',
  'detectedAt', 'confirmedAt', 'metadata',
] as const satisfies readonly (keyof ReturnType<typeof presentDeposit>)[];

/** The data of deposit.pending / deposit.confirmed (and of every deposit event to come). */
export function depositEventData(d: DepositRecord): Record<string, unknown> {
  const view = presentDeposit(d);
  return Object.fromEntries(DEPOSIT_EVENT_FIELDS.map((f) => [f, view[f]]));
}
