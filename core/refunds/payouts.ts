import { refunds } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import type { Protocol } from '../chains/chain';
import { AppError } from '../platform/errors';
import { formatAmount, parseAmount } from '../platform/amounts';
import { newId } from '../platform/ids';
import { auditAction, type Actor } from '../reconciliation/actor';
import type { RefundRow } from '../views/refund';
import { checkRefundDestination, destinationRefusalMessage } from './destination';
import { expiryOf, newClaimToken, requireReason } from './refunds';

/**
 * Payouts (issue 42): the refunds' machinery without an order. The merchant pays an affiliate or a
 * seller from its own wallet and keeps the record in Stablegate: the same row (kind payout), claim
 * page, approval, export, watching of the destination and expiry as a refund
 * (core/refunds/refunds.ts, refund-settlement.ts); only the issue differs, here.
 */

export interface IssuePayoutInput {
  /** Decimal string in token units: any valid positive amount of the token (a payout returns nothing, so nothing caps it). */
  amount: string;
  currency: string;
  chainId: string;
  reason: string;
  /** RFC 3339 with an offset; default DEFAULT_REFUND_DAYS from now. */
  expiresAt?: string;
  /**
   * Given by the merchant: checked as a claim is (core/refunds/destination.ts), then the payout is
   * `claimed` at once, awaiting approval. Absent: `awaiting_claim`, its claimUrl for the recipient.
   */
  destination?: string;
  /** The destination typed again (the dashboard's form asks twice); the API takes it once. */
  destinationConfirmation?: string;
}

/**
 * Issues a payout (Admin and Owner: the routes and pages check the role). The organization's
 * max_order_amount does not apply: that setting bounds what payers are asked to pay for an
 * order; a payout is money the merchant sends from its own wallet, approved by an Admin or Owner.
 * A refused destination or amount throws before anything is written.
 */
export async function issuePayout(ctx: ServiceContext, actor: Actor, input: IssuePayoutInput): Promise<RefundRow> {
  const reason = requireReason(input.reason, 'payout');
  const now = ctx.clock.now();
  const expiresAt = expiryOf(input.expiresAt, now);
  const chain = ctx.registry.requireOfferedChain(input.chainId);
  const token = ctx.registry.requireToken(chain, input.currency);
  const amount = parseAmount(input.amount, token.decimals);
  return ctx.db.transaction(async (tx) => {
    let destination: string | null = null;
    if (input.destination !== undefined) {
      const checked = await checkRefundDestination(tx, { protocol: chain.protocol as Protocol, tokenAddress: token.address! }, input.destination, input.destinationConfirmation ?? input.destination);
      if (!checked.ok) {
        const message = destinationRefusalMessage(checked.refusal);
        throw new AppError('VALIDATION_ERROR', message, [{ field: checked.refusal.code === 'mismatch' ? 'destinationConfirmation' : 'destination', message }]);
      }
      destination = checked.address;
    }
    const [row] = await tx
      .insert(refunds)
      .values({
        id: newId('po'),
        organizationId: actor.organizationId,
        kind: 'payout',
        amount,
        currency: input.currency,
        chainId: chain.chainId,
        protocol: chain.protocol as Protocol,
        tokenAddress: token.address!,
        reason,
        status: destination ? 'claimed' : 'awaiting_claim',
        claimToken: newClaimToken(),
        destination,
        requestedBy: actor.name,
        issuedBy: actor.name,
        issuedAt: now,
        claimedAt: destination ? now : null,
        expiresAt,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    await auditAction(tx, actor, 'payout.issued', row.id, {
      amount: formatAmount(amount, token.decimals),
      currency: row.currency,
      chainId: row.chainId,
      destination,
      reason,
    });
    return row;
  });
}
