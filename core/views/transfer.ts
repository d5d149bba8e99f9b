import { Type, type Static } from '@sinclair/typebox';
import type { ChainRegistry } from '../chains/registry';
import { transferRequiredConfirmations } from '../chains/confirmation-policy';
import { formatAmount } from '../platform/amounts';
import { DateTime, Nullable, NullableDateTime, StringEnum } from '../platform/wire-schema';
import { TRANSFER_STATUSES, UNATTRIBUTED_REASONS, type TransferRecord, type UnattributedReason } from '../transfers/transfers';
import type { StoredTransferCandidate } from '../../db/schema';

/**
 * A transfer on the wire, declared once: the OpenAPI document shows this schema and TransferView
 * is derived from it. The read model (core/transfers/transfers.ts) reads the records, this
 * presents them.
 */

/** Who an unattributed transfer could have been meant for (core/detection/attribution.ts unattributedCandidates). */
export const transferCandidateSchema = Type.Object(
  {
    kind: StringEnum(['order', 'deposit'] as const),
    relation: StringEnum(['possible', 'previous', 'next'] as const, {
      description:
        'possible (undecidable): the evidence could not rule out that this holder held the address when the block was mined. previous (no_holder): the holder whose time ended most recently before the block (within a day). next (no_holder): the holder that began first after the block (within an hour)',
    }),
    orderId: Nullable(Type.String({ description: 'kind order: the order' })),
    depositReference: Nullable(Type.String({ description: 'kind deposit: the reference' })),
    bindingId: Nullable(Type.String({ description: "kind deposit: the reference's binding of the address (as deposits show it)" })),
    heldFrom: DateTime({ description: 'When the holder took the address' }),
    heldUntil: NullableDateTime({ description: 'When it gave it up (null: still holds it)' }),
  },
  { description: 'A candidate holder; evidence only, nothing is credited to it' },
);
export type TransferCandidateView = Static<typeof transferCandidateSchema>;

const candidatesSchema = Type.Array(transferCandidateSchema, {
  description:
    'Unattributed only: who it could have been meant for, kept when it was recorded (evidence; nothing is credited to them; the merchant decides). Empty when attributed, when the evidence names nobody, or for a transfer recorded before the candidates were kept',
});

/** The one presenter of stored candidates (the transfer and its transfer.unattributed event). */
export function presentCandidates(stored: readonly StoredTransferCandidate[] | null): TransferCandidateView[] {
  return (stored ?? []).map((c) => ({
    kind: c.kind,
    relation: c.relation,
    orderId: c.orderId,
    depositReference: c.depositReference,
    bindingId: c.depositBindingId,
    heldFrom: c.heldFrom,
    heldUntil: c.heldUntil,
  }));
}

export const transferSchema = Type.Object({
  id: Type.String({ example: 'trf_01jd…' }),
  transferId: Type.String({ description: 'Same as id' }),
  chainId: Type.String(),
  protocol: Type.String({ enum: ['evm', 'tron', 'solana'] }),
  currency: Type.String(),
  tokenAddress: Type.String(),
  amount: Type.String({ description: 'Decimal string in token units' }),
  from: Type.String(),
  to: Type.String({ description: 'The pool address that received it' }),
  txHash: Type.String(),
  logIndex: Type.Integer({ description: "The log's position in its block (data; the transfer's identity is chain, txHash and its index within the transaction)" }),
  blockNumber: Type.Integer(),
  blockHash: Type.String(),
  blockTimestamp: DateTime({ description: 'Chain time of the block' }),
  confirmations: Type.Integer(),
  requiredConfirmations: Nullable(Type.Integer()),
  status: StringEnum(TRANSFER_STATUSES, {
    description:
      'dropped: its block was orphaned by a reorganisation before confirmation; never credited. reorged: confirmed, then its block was orphaned deeper than the required confirmations; the credit stays (confirmed again if the transaction is mined again)',
  }),
  attribution: Nullable(StringEnum(['order', 'deposit', 'refund']), {
    description:
      "null: attributed to nobody (recorded, never credited); unattributedReason says why. refund: the merchant's own payment of an approved refund or payout to its destination (refundId; counted says whether it pays it)",
  }),
  refundId: Nullable(Type.String({ description: 'attribution refund: the refund or payout it pays' })),
  unattributedReason: Nullable(StringEnum(UNATTRIBUTED_REASONS), {
    description:
      'Why attribution is null. no_holder: the block was mined while nobody held the address (before it was first handed out, or after its holder ended: cooling down or back in the pool; a payment after an order completed or expired). undecidable: the block may have been mined before or after the address changed hands and the service cannot tell (its scanner was stalled or behind, or the workers were down, while the address was handed out; or it was mined in the last moments of an assignment and seen only after it ended). paid_late: mined after its order\'s grace, within the organization\'s late-payment window (the order shows paidLate). Never credited to a guess; the merchant decides (POST /transfers/{id}/attribute, or a refund). null when attributed',
  }),
  minedAfter: NullableDateTime({
    description: 'Evidence of when the block was mined: the last time the service saw the chain head below it (null: never). Attribution compares it with when the address changed hands; block timestamps are not used',
  }),
  minedBy: NullableDateTime({ description: 'Evidence of when the block was mined: the first time the service knew a head at or past it' }),
  candidates: candidatesSchema,
  attributedBy: Nullable(Type.String({ description: 'Attributed by hand (POST /transfers/{id}/attribute): who (a user\'s e-mail, or the API key); null when the detection attributed it or nobody did' })),
  attributedAt: NullableDateTime({ description: 'Attributed by hand: when' }),
  attributionReason: Nullable(Type.String({ description: 'Attributed by hand: why, as given' })),
  orderId: Nullable(Type.String()),
  orderReference: Nullable(Type.String()),
  depositReference: Nullable(Type.String()),
  depositId: Nullable(Type.String()),
  counted: Type.Boolean({ description: 'Counts toward its order: same chain and token, block time at or before the end of its grace period' }),
  credited: Type.Boolean({ description: 'Confirmed and credited to its order or deposit' }),
  detectedAt: DateTime(),
  confirmedAt: NullableDateTime(),
  droppedAt: NullableDateTime(),
});

/** A transfer on the wire. */
export type TransferView = Static<typeof transferSchema>;

/** The one presenter of a transfer (GET /transfers and /transfers/:id). */
export function presentTransfer(registry: ChainRegistry, r: TransferRecord): TransferView {
  const t = r.t;
  const chain = registry.get(t.chainId);
  return {
    id: t.id,
    transferId: t.id,
    chainId: t.chainId,
    protocol: t.protocol,
    currency: t.currency,
    tokenAddress: t.tokenAddress,
    amount: formatAmount(t.amount, registry.tokenDecimals(t.chainId, t.currency)),
    from: t.fromAddress,
    to: t.toAddress,
    txHash: t.txHash,
    logIndex: t.logIndex,
    blockNumber: t.blockNumber,
    blockHash: t.blockHash,
    blockTimestamp: t.blockTimestamp.toISOString(),
    confirmations: t.confirmations,
    // What the confirmations job confirms it at (core/chains/confirmation-policy.ts).
    requiredConfirmations: chain ? transferRequiredConfirmations(chain, t.requiredConfirmations) : t.requiredConfirmations,
    status: t.status,
    attribution: t.orderId ? 'order' : t.depositBindingId ? 'deposit' : t.refundId ? 'refund' : null,
    refundId: t.refundId,
    unattributedReason: t.orderId || t.depositBindingId || t.refundId ? null : (t.unattributedReason ?? null),
    minedAfter: t.minedAfter?.toISOString() ?? null,
    minedBy: t.minedBy?.toISOString() ?? null,
    // Kept when it is attributed by hand: the evidence the merchant decided on stays on record.
    candidates: presentCandidates(t.unattributedCandidates),
    attributedBy: t.attributedBy,
    attributedAt: t.attributedAt?.toISOString() ?? null,
    attributionReason: t.attributionReason,
    orderId: t.orderId,
    orderReference: r.orderReference ?? null,
    depositReference: r.depositReference ?? null,
    depositId: r.depositId ?? null,
    counted: t.counted,
    credited: t.credited,
    detectedAt: t.detectedAt.toISOString(),
    confirmedAt: t.confirmedAt?.toISOString() ?? null,
    droppedAt: t.droppedAt?.toISOString() ?? null,
  };
}

/** The data of transfer.unattributed, declared once (api/webhook-events.openapi.ts shows it). */
export const transferUnattributedEventSchema = Type.Object({
  transferId: Type.String({ example: 'trf_01jd…' }),
  reason: StringEnum(UNATTRIBUTED_REASONS, {
    description: "As the transfer's unattributedReason. paid_late: after its order's grace, inside the late-payment window: the candidate (relation previous) is that order",
  }),
  amount: Type.String({ description: 'Decimal string in token units', example: '0.5' }),
  currency: Type.String(),
  chainId: Type.String(),
  txHash: Type.String(),
  from: Type.String({ description: 'The sender' }),
  to: Type.String({ description: 'The pool address that received it' }),
  blockNumber: Type.Integer(),
  blockTimestamp: DateTime({ description: 'Chain time of the block' }),
  candidates: candidatesSchema,
});
export type TransferUnattributedEventData = Static<typeof transferUnattributedEventSchema>;

/** A transfer as the recording inserts it: what its event is built from. */
export interface RecordedUnattributedTransfer {
  id: string;
  unattributedReason: UnattributedReason;
  chainId: string;
  currency: string;
  amount: bigint;
  txHash: string;
  fromAddress: string;
  toAddress: string;
  blockNumber: number;
  blockTimestamp: Date;
  unattributedCandidates: readonly StoredTransferCandidate[] | null;
}

/** The data of transfer.unattributed (core/detection/record-transfer.ts emits it in the recording transaction). */
export function transferUnattributedEventData(registry: ChainRegistry, t: RecordedUnattributedTransfer): TransferUnattributedEventData {
  return {
    transferId: t.id,
    reason: t.unattributedReason,
    amount: formatAmount(t.amount, registry.tokenDecimals(t.chainId, t.currency)),
    currency: t.currency,
    chainId: t.chainId,
    txHash: t.txHash,
    from: t.fromAddress,
    to: t.toAddress,
    blockNumber: t.blockNumber,
    blockTimestamp: t.blockTimestamp.toISOString(),
    candidates: presentCandidates(t.unattributedCandidates),
  };
}
