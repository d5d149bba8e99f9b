import { Type } from '@sinclair/typebox';
import { TRANSFER_STATUSES } from '../transfers/transfers';
import { DateTime, Nullable, NullableDateTime, StringEnum } from '../platform/wire-schema';

/**
 * A transfer on the wire. The core's reader presents it (core/transfers/transfers.ts, one query
 * for the route and the pages); the routes answer with `transferSchema`, so a TransferView that
 * no longer matches this schema fails to compile.
 */
export { TRANSFER_STATUSES };

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
  attribution: Nullable(StringEnum(['order', 'deposit']), { description: 'null: the address was held by nobody at the block time (recorded, never credited)' }),
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
