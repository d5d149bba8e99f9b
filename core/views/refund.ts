import { Type, type Static } from '@sinclair/typebox';
import type { ServiceContext } from '../service/context';
import { REFUND_KINDS, REFUND_STATUSES, type refunds } from '../../db/schema';
import { formatAmount } from '../platform/amounts';
import { DateTime, Nullable, NullableDateTime, StringEnum } from '../platform/wire-schema';
import { paymentRequestUri } from '../chains/payment-request-uri';

/** A refund as stored. */
export type RefundRow = typeof refunds.$inferSelect;

/** The claim page of a refund: its unguessable token, never its id. */
export function claimUrlOf(config: Pick<ServiceContext['config'], 'publicBaseUrl'>, refund: Pick<RefundRow, 'claimToken'>): string {
  return `${config.publicBaseUrl}/refund/${refund.claimToken}`;
}

/** The refund's wire object, declared once: the OpenAPI document shows this schema and RefundView is derived from it. */
export const refundSchema = Type.Object({
  id: Type.String({ example: 'rf_01jd3k…', description: 'rf_… for a refund, po_… for a payout' }),
  kind: StringEnum(REFUND_KINDS, { description: 'refund: returns an order, a deposit reference or a transfer; payout: none (POST /payouts)' }),
  status: StringEnum(REFUND_STATUSES, {
    description:
      'requested (asked by a Member; an Admin or Owner issues it), awaiting_claim (the payer has the claim link), claimed (the payer gave a destination), approved (you will pay it from your own wallet: see paymentUri; Stablegate watches the destination), completed (your payment to the destination, mined after the approval, reached the amount and is confirmed: txHash), expired (not claimed before expiresAt; an approved one only when nothing was paid toward it and its chain has been scanned past expiresAt), cancelled',
  }),
  amount: Type.String({ description: 'Decimal string in token units', example: '2.5' }),
  amountPaid: Type.String({
    description:
      "What the merchant's payments to the destination add up to so far (token units): transfers of its token mined after its approval, pending and confirmed. Below amount: partly paid; completed once the confirmed ones reach amount",
  }),
  currency: Type.String({ example: 'USDT' }),
  chainId: Type.String({ example: 'ethereum-sepolia' }),
  protocol: StringEnum(['evm', 'tron', 'solana'] as const),
  tokenAddress: Type.String({ description: 'The token contract (the mint on Solana) the refund is paid in' }),
  orderId: Nullable(Type.String({ description: 'The order it refunds, if any' })),
  depositReference: Nullable(Type.String({ description: 'The deposit reference it refunds, if any' })),
  transferId: Nullable(Type.String({ description: 'The unattributed transfer it returns, if any' })),
  reason: Type.String(),
  claimUrl: Nullable(
    Type.String({ description: 'The public claim page, <PUBLIC_BASE_URL>/refund/<token> (128 random bits): send it to the payer. null while requested' }),
  ),
  destination: Nullable(Type.String({ description: 'Where the payer wants it paid (claimed and later), in the family\'s normalised form' })),
  paymentUri: Nullable(
    Type.String({
      description:
        'Approved: what a wallet needs to pay it, for the exact amount to the destination: EIP-681 with the chain id (EVM), a tron: URI (Tron), a Solana Pay transfer request whose reference is derived from the refund id (Solana). null otherwise',
    }),
  ),
  requestedBy: Type.String({ description: 'Who created it (a user\'s e-mail or "api key <id>")' }),
  issuedBy: Nullable(Type.String()),
  issuedAt: NullableDateTime(),
  claimedAt: NullableDateTime(),
  approvedBy: Nullable(Type.String()),
  approvedAt: NullableDateTime(),
  cancelledBy: Nullable(Type.String()),
  cancelledAt: NullableDateTime(),
  expiresAt: DateTime({ description: 'Not claimed by then: expired. Approved and still unpaid once its chain has been scanned past it: expired too (partly paid: stays approved)' }),
  expiredAt: NullableDateTime(),
  txHash: Nullable(Type.String({ description: 'Completed: the payment' })),
  completedAt: NullableDateTime(),
  createdAt: DateTime(),
});

export type RefundView = Static<typeof refundSchema>;

/** The one presenter of a refund: every route, page and refund event's data are built from it. */
export function presentRefund(ctx: Pick<ServiceContext, 'registry' | 'config'>, r: RefundRow): RefundView {
  const decimals = ctx.registry.tokenDecimals(r.chainId, r.currency);
  return {
    id: r.id,
    kind: r.kind,
    status: r.status,
    amount: formatAmount(r.amount, decimals),
    amountPaid: formatAmount(r.amountPaid, decimals),
    currency: r.currency,
    chainId: r.chainId,
    protocol: r.protocol,
    tokenAddress: r.tokenAddress,
    orderId: r.orderId,
    depositReference: r.depositReference,
    transferId: r.transferId,
    reason: r.reason,
    claimUrl: r.status === 'requested' ? null : claimUrlOf(ctx.config, r),
    destination: r.destination,
    paymentUri: r.status === 'approved' && r.destination ? paymentRequestUri(ctx.registry, r, r.destination) : null,
    requestedBy: r.requestedBy,
    issuedBy: r.issuedBy,
    issuedAt: r.issuedAt?.toISOString() ?? null,
    claimedAt: r.claimedAt?.toISOString() ?? null,
    approvedBy: r.approvedBy,
    approvedAt: r.approvedAt?.toISOString() ?? null,
    cancelledBy: r.cancelledBy,
    cancelledAt: r.cancelledAt?.toISOString() ?? null,
    expiresAt: r.expiresAt.toISOString(),
    expiredAt: r.expiredAt?.toISOString() ?? null,
    txHash: r.txHash,
    completedAt: r.completedAt?.toISOString() ?? null,
    createdAt: r.createdAt.toISOString(),
  };
}
