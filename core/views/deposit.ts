import { Type, type Static } from '@sinclair/typebox';
import { PROTOCOLS } from '../chains/registry';
import { currencySymbolSchema } from './chain';
import { DateTime, iso, metadataOut, NullableDateTime, StringEnum } from '../platform/wire-schema';

/**
 * A deposit as the domain hands it out: the deposit row joined with its transfer (chain facts)
 * and its binding (metadata). Amount is a decimal string in token units. Declared beside its
 * presenter: core/deposits/ builds it and emits its events through this file, so core/views/ imports
 * nothing from core/deposits/.
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
  /** Chain time of the transfer's block. */
  blockTimestamp: Date;
  status: DepositStatus;
  confirmations: number;
  requiredConfirmations: number;
  metadata: Record<string, unknown>;
  detectedAt: Date;
  confirmedAt: Date | null;
  completedAt: Date | null;
  droppedAt: Date | null;
}

export const DEPOSIT_STATES_DOC =
  'States: pending (seen on chain) → confirmed (required confirmations reached; event deposit.confirmed) → completed (block final by the chain\'s finality rule; no event). ' +
  'Extension: dropped — a pending deposit whose block was orphaned by a reorg; it never counted. A confirmed deposit is final.';

/** A deposit on the wire, declared once (the API answers and the deposit events alike). */
export const depositSchema = Type.Object(
  {
    depositId: Type.String({ example: 'dep_01jd...' }),
    id: Type.String({ description: 'Same as depositId' }),
    depositReference: Type.String(),
    amount: Type.String({ example: '10.5' }),
    currency: currencySymbolSchema(),
    chainId: Type.String(),
    chain: Type.String({ description: 'Same as chainId' }),
    protocol: Type.String({ enum: [...PROTOCOLS] }),
    address: Type.String(),
    fromAddress: Type.String(),
    txHash: Type.String(),
    logIndex: Type.Integer(),
    blockNumber: Type.Integer(),
    status: StringEnum(DEPOSIT_STATUSES),
    confirmations: Type.Integer(),
    requiredConfirmations: Type.Integer(),
    transferId: Type.String(),
    detectedAt: DateTime(),
    confirmedAt: NullableDateTime(),
    completedAt: NullableDateTime(),
    droppedAt: NullableDateTime(),
    metadata: metadataOut(),
  },
  { description: DEPOSIT_STATES_DOC },
);

/** A deposit on the wire. */
export type DepositView = Static<typeof depositSchema>;

/**
 * The one wire object of a deposit (API answers and event data alike): both `depositId` and
 * `id`, both `chainId` and `chain` (design.md §4a).
 */
export function presentDeposit(d: DepositRecord): DepositView {
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
