import { and, desc, eq, sql } from 'drizzle-orm';
import { depositBindings, orders, refunds, transfers } from '../../db/schema';
import type { Tx } from '../../db/client';
import type { ServiceContext } from '../service/context';
import { AppError, notFound, validationError } from '../platform/errors';
import { recomputeOrder } from '../orders/order-state';
import { candidateOrderIds, forgetUnattributedPayment } from '../orders/exceptions';
import { confirmDeposit, recordDeposit } from '../deposits/lifecycle';
import { getTransfer, type TransferRecord } from '../transfers/transfers';
import { logMoney, tokenAmount } from '../platform/money-log';
import { auditAction, type Actor } from './actor';

export type AttributionTarget = { orderId: string } | { depositReference: string };

/** Exactly one of orderId and depositReference, as the API body and the dashboard form give them. */
export function attributionTargetOf(input: { orderId?: string; depositReference?: string }): AttributionTarget {
  const orderId = input.orderId?.trim() || undefined;
  const depositReference = input.depositReference?.trim() || undefined;
  if ((orderId === undefined) === (depositReference === undefined)) {
    throw validationError('Give exactly one of orderId and depositReference: the order or the deposit reference the payment was meant for', [
      { field: orderId === undefined ? 'orderId' : 'depositReference', message: 'give exactly one of orderId and depositReference' },
    ]);
  }
  return orderId !== undefined ? { orderId } : { depositReference: depositReference! };
}

/**
 * A merchant attributes a transfer the detection left unattributed (issue 40; BTCPay's "mark
 * settled", Epusdt's "fill by tx hash"): POST /transfers/:id/attribute and the dashboard's button.
 * The one operation for both, in one transaction:
 * - the transfer must be the organization's, not dropped, and not attributed: either attributed to
 *   nobody, or recorded against an order without counting (paid after its grace). Anything else is
 *   409: a credit is never moved by hand;
 * - to an order of the same chain and token (else 400): it counts toward it from now on, and the
 *   order is recomputed by its one decision (order-state.ts), where a payment attributed by hand
 *   can complete even an expired order (resolution manual);
 * - to a deposit reference of the same family (else 400): its binding for that family (the one that
 *   held this address if any, else the open one, else the latest) records the deposit, confirmed at
 *   once when the transfer already has the confirmations a deposit needs;
 * - who, when and why stay on the transfer (and in the audit log); its evidence (minedAfter,
 *   minedBy, the reason it was left unattributed, its candidates) stays as recorded.
 */
export async function attributeTransfer(ctx: ServiceContext, actor: Actor, transferId: string, target: AttributionTarget, reason: string): Promise<TransferRecord> {
  const why = reason.trim();
  if (why === '') throw validationError('reason must say why the payment is attributed by hand', [{ field: 'reason', message: 'must not be empty' }]);
  return ctx.db.transaction(async (tx) => {
    const [t] = await tx
      .select()
      .from(transfers)
      .where(and(eq(transfers.id, transferId), eq(transfers.organizationId, actor.organizationId)))
      .for('update');
    if (!t) throw notFound(`Transfer ${transferId}`);
    if (t.status === 'dropped') throw conflict(`Transfer ${transferId} was dropped (its block left the chain): there is no payment to attribute`);
    if (!awaitsAttribution(t)) {
      throw conflict(
        t.attributedBy !== null
          ? `Transfer ${transferId} was already attributed by hand (by ${t.attributedBy})`
          : `Transfer ${transferId} is already attributed to ${t.orderId ? `order ${t.orderId}` : 'a deposit reference'}`,
      );
    }
    // A payment being returned to its payer (issue 42) is not credited as well: cancel the refund first.
    const [refund] = await tx
      .select({ id: refunds.id })
      .from(refunds)
      .where(and(eq(refunds.transferId, t.id), sql`${refunds.status} not in ('cancelled', 'expired')`))
      .limit(1);
    if (refund) throw conflict(`Transfer ${transferId} is being refunded (refund ${refund.id}): cancel the refund before attributing the payment`);
    const now = ctx.clock.now();
    const manual = { attributedBy: actor.name, attributedAt: now, attributionReason: why };
    let targetText: string;
    if ('orderId' in target) {
      const [order] = await tx
        .select({ id: orders.id, chainId: orders.chainId, currency: orders.currency, routes: orders.routes, requiredConfirmations: orders.requiredConfirmations })
        .from(orders)
        .where(and(eq(orders.id, target.orderId), eq(orders.organizationId, actor.organizationId)));
      if (!order) throw notFound('Order');
      // A USD order takes a payment by any route it offers (the merchant decides; the payer may have paid by one not chosen).
      const accepted = order.routes ?? (order.chainId === null ? [] : [{ chainId: order.chainId, currency: order.currency }]);
      if (!accepted.some((r) => r.chainId === t.chainId && r.currency === t.currency)) {
        const pricedIn = order.routes ? `priced in USD, paid by ${order.routes.map((r) => `${r.currency} on ${r.chainId}`).join(', ')}` : `${order.currency} on ${order.chainId}`;
        throw validationError(`Order ${order.id} is ${pricedIn}; the transfer is ${t.currency} on ${t.chainId}: a payment counts only toward an order of its own chain and token`, [
          { field: 'orderId', message: `must be an order in ${t.currency} on ${t.chainId}` },
        ]);
      }
      await tx
        .update(transfers)
        .set({ ...manual, orderId: order.id, depositBindingId: null, counted: true, requiredConfirmations: t.requiredConfirmations ?? order.requiredConfirmations })
        .where(eq(transfers.id, t.id));
      targetText = `order ${order.id}`;
    } else {
      const bindingId = await bindingFor(tx, actor.organizationId, target.depositReference, t.protocol, t.poolAddressId);
      await tx.update(transfers).set({ ...manual, orderId: null, depositBindingId: bindingId, counted: false }).where(eq(transfers.id, t.id));
      targetText = `deposit reference ${target.depositReference}`;
    }
    // It was recorded against an order without counting (paid late) or named orders as candidates: they no longer wait on it.
    if (t.orderId === null) await forgetUnattributedPayment(tx, candidateOrderIds(t.unattributedCandidates));
    if ('orderId' in target) {
      if (t.orderId !== null && t.orderId !== target.orderId) await recomputeOrder(tx, ctx, t.orderId);
      await recomputeOrder(tx, ctx, target.orderId);
    } else {
      await recordDeposit(tx, ctx, t.id);
      // Already confirmed on the chain: the deposit is confirmed now if it has a deposit's
      // confirmations; else the transfer waits for them as any pending one does.
      if ((t.status === 'confirmed' || t.status === 'reorged') && !(await confirmDeposit(tx, ctx, t.id))) {
        await tx.update(transfers).set({ status: 'pending', confirmedAt: null }).where(eq(transfers.id, t.id));
      }
    }
    await auditAction(tx, actor, 'transfer.attributed', t.id, { to: targetText, reason: why, previousOrderId: t.orderId, unattributedReason: t.unattributedReason });
    logMoney(ctx.logger, 'payment attributed by hand', {
      transferId: t.id,
      organizationId: actor.organizationId,
      to: targetText,
      by: actor.name,
      reason: why,
      chainId: t.chainId,
      currency: t.currency,
      amount: tokenAmount(ctx.registry, t.chainId, t.currency, t.amount),
      txHash: t.txHash,
    });
    return getTransfer(tx, actor.organizationId, t.id);
  });
}

/**
 * What attributeTransfer accepts (beside dropped, refused apart): attributed to nobody, or recorded
 * against an order without counting (paid after its grace), and never attributed by hand. The
 * dashboard offers its form on exactly these.
 */
export function awaitsAttribution(t: Pick<TransferRow, 'depositBindingId' | 'attributedBy' | 'orderId' | 'counted' | 'refundId'>): boolean {
  // A refund's payment is the merchant's own outgoing payment: never an incoming one to attribute.
  return t.refundId === null && t.depositBindingId === null && t.attributedBy === null && (t.orderId === null || !t.counted);
}

type TransferRow = typeof transfers.$inferSelect;

const conflict = (message: string) => new AppError('CONFLICT', message);

/**
 * The binding of a deposit reference that receives a payment into a pool address of `protocol`:
 * the one that held that address (the payer used an address that was theirs), else the open one,
 * else the most recent. 404 when the reference has none in that family.
 */
async function bindingFor(tx: Tx, organizationId: string, depositReference: string, protocol: string, poolAddressId: number | null): Promise<string> {
  const [binding] = await tx
    .select({ id: depositBindings.id })
    .from(depositBindings)
    .where(and(eq(depositBindings.organizationId, organizationId), eq(depositBindings.depositReference, depositReference), eq(depositBindings.protocol, protocol)))
    .orderBy(
      sql`(${depositBindings.poolAddressId} = ${poolAddressId ?? -1}) desc`,
      sql`(${depositBindings.unboundAt} is null) desc`,
      desc(depositBindings.createdAt),
    )
    .limit(1);
  if (!binding) {
    throw new AppError('DEPOSIT_REFERENCE_NOT_FOUND', `Deposit reference "${depositReference}" has no ${protocol} address: a payment is attributed only to a reference of its own family`);
  }
  return binding.id;
}
