import { Type, type Static } from '@sinclair/typebox';
import type { ChainRegistry } from '../chains/registry';
import { transferRequiredConfirmations } from '../chains/confirmation-policy';
import { formatAmount } from '../platform/amounts';
import { DateTime, Nullable, NullableDateTime, StringEnum } from '../platform/wire-schema';
import { TRANSFER_STATUSES, type TransferRecord } from '../transfers/transfers';

/**
 * A transfer on the wire, declared once: the OpenAPI document shows this schema and TransferView
 * is derived from it. The read model (core/transfers/transfers.ts) reads the records, this
 * presents them.
 */

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
  attribution: Nullable(StringEnum(['order', 'deposit']), {
    description: 'null: attributed to nobody (recorded, never credited); unattributedReason says why',
  }),
  unattributedReason: Nullable(StringEnum(['no_holder', 'undecidable']), {
    description:
      'Why attribution is null. no_holder: the block was mined while nobody held the address (before it was first handed out, or after its holder ended: cooling down or back in the pool; a payment after an order completed or expired). undecidable: the block may have been mined before or after the address changed hands and the service cannot tell (its scanner was stalled or behind, or the workers were down, while the address was handed out; or it was mined in the last moments of an assignment and seen only after it ended). Never credited to a guess; the merchant decides (refund or settle by hand). null when attributed',
  }),
  minedAfter: NullableDateTime({
    description: 'Evidence of when the block was mined: the last time the service saw the chain head below it (null: never). Attribution compares it with when the address changed hands; block timestamps are not used',
  }),
  minedBy: NullableDateTime({ description: 'Evidence of when the block was mined: the first time the service knew a head at or past it' }),
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
    attribution: t.orderId ? 'order' : t.depositBindingId ? 'deposit' : null,
    unattributedReason: t.orderId || t.depositBindingId ? null : (t.unattributedReason ?? null),
    minedAfter: t.minedAfter?.toISOString() ?? null,
    minedBy: t.minedBy?.toISOString() ?? null,
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
