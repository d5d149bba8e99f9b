import { and, eq, inArray, ne, sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client';
import { refunds, transfers } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import type { Protocol } from '../chains/chain';
import { normalizeAddress } from '../chains/addresses';
import { emitEvent } from '../events/events';
import { logMoney, tokenAmount } from '../platform/money-log';
import { presentRefund } from '../views/refund';
import { refundEventType } from './refund-events';

/**
 * Watching the chain for the merchant's refund and payout payments (issue 42): an approved
 * refund's destination is a second kind of watched address of the detection core. A transfer of
 * the refund's token into it, mined after the approval, pays it; confirmed payments that reach
 * its amount complete it (refund.completed / payout.completed with the transaction). The
 * detection records the payments (core/detection/record-transfer.ts recordRefundPayments) and asks
 * here for the decision, as it does of the order domain.
 */

export interface WatchedDestination {
  refundId: string;
  organizationId: string;
  currency: string;
  tokenAddress: string;
  approvedAt: Date;
  destination: string;
}

/** The approved refunds of a chain paid to any of `candidates` (the range's recipients): one indexed query. */
export async function findRefundDestinations(db: DbOrTx, chainId: string, protocol: Protocol, candidates: string[]): Promise<Map<string, WatchedDestination[]>> {
  const out = new Map<string, WatchedDestination[]>();
  const forms = [...new Set(candidates.map((a) => normalizeAddress(protocol, a)).filter((a): a is string => a !== null))];
  if (forms.length === 0) return out;
  const rows = await db
    .select({
      refundId: refunds.id,
      organizationId: refunds.organizationId,
      currency: refunds.currency,
      tokenAddress: refunds.tokenAddress,
      approvedAt: refunds.approvedAt,
      destination: refunds.destination,
    })
    .from(refunds)
    .where(and(eq(refunds.chainId, chainId), eq(refunds.status, 'approved'), sql`${refunds.destination} = any(${sql.param(forms)}::text[])`));
  for (const r of rows) {
    if (!r.destination || !r.approvedAt) continue;
    out.set(r.destination, [...(out.get(r.destination) ?? []), { ...r, destination: r.destination, approvedAt: r.approvedAt }]);
  }
  return out;
}

/** The destinations an address-by-address scanner (Solana addresses mode) must ask about too. */
export const WATCHED_DESTINATIONS_SQL = sql`select destination as address from refunds where protocol = ${sql.placeholder('protocol')} and status = 'approved' and destination is not null`;

/**
 * Pure: a refund's state from its counted payments that are not dropped. Paid: what they add up to
 * (pending and confirmed); complete when the confirmed ones reach the amount, by the payment that
 * brought them there (chain order).
 */
export function decideRefund(
  refund: { amount: bigint },
  payments: readonly { txHash: string; amount: bigint; status: string; blockNumber: number; logIndex: number }[],
): { amountPaid: bigint; completingTxHash: string | null } {
  const amountPaid = payments.reduce((s, p) => s + p.amount, 0n);
  const confirmed = payments.filter((p) => p.status === 'confirmed' || p.status === 'reorged').sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
  let running = 0n;
  for (const p of confirmed) {
    running += p.amount;
    if (running >= refund.amount) return { amountPaid, completingTxHash: p.txHash };
  }
  return { amountPaid, completingTxHash: null };
}

/**
 * Recomputes one refund inside the caller's transaction (a payment recorded, confirmed, dropped or
 * moved): its amount paid, and approved → completed once its confirmed payments reach the amount,
 * emitting refund.completed (payout.completed for a payout) in the same transaction. A completed
 * refund stays completed (a confirmed payment is final, as an order's).
 */
export async function recomputeRefund(tx: Tx, ctx: ServiceContext, refundId: string): Promise<void> {
  const [refund] = await tx.select().from(refunds).where(eq(refunds.id, refundId)).for('update');
  if (!refund) throw new Error(`recomputeRefund: refund ${refundId} does not exist`);
  const payments = await tx
    .select({ txHash: transfers.txHash, amount: transfers.amount, status: transfers.status, blockNumber: transfers.blockNumber, logIndex: transfers.logIndex })
    .from(transfers)
    .where(and(eq(transfers.refundId, refundId), eq(transfers.counted, true), ne(transfers.status, 'dropped')));
  const decision = decideRefund(refund, payments);
  const now = ctx.clock.now();
  if (refund.status !== 'approved' || decision.completingTxHash === null) {
    if (decision.amountPaid !== refund.amountPaid) await tx.update(refunds).set({ amountPaid: decision.amountPaid, updatedAt: now }).where(eq(refunds.id, refundId));
    return;
  }
  const [completed] = await tx
    .update(refunds)
    .set({ status: 'completed', amountPaid: decision.amountPaid, txHash: decision.completingTxHash, completedAt: now, updatedAt: now })
    .where(and(eq(refunds.id, refundId), eq(refunds.status, 'approved')))
    .returning();
  if (!completed) return;
  logMoney(ctx.logger, completed.kind === 'payout' ? 'payout completed' : 'refund completed', {
    refundId,
    organizationId: completed.organizationId,
    chainId: completed.chainId,
    currency: completed.currency,
    amount: tokenAmount(ctx.registry, completed.chainId, completed.currency, completed.amount),
    destination: completed.destination,
    txHash: completed.txHash,
  });
  await emitEvent(tx, {
    organizationId: completed.organizationId,
    type: refundEventType(completed.kind, 'completed'),
    data: presentRefund(ctx, completed),
    createdAt: now,
  });
}

/** The refunds some transfers pay (those that pay one). */
export async function refundsOf(tx: Tx, transferIds: string[]): Promise<string[]> {
  if (transferIds.length === 0) return [];
  const rows = await tx.selectDistinct({ refundId: transfers.refundId }).from(transfers).where(and(inArray(transfers.id, transferIds), sql`${transfers.refundId} is not null`));
  return rows.map((r) => r.refundId!);
}
