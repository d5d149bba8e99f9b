import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client';
import { depositBindings, deposits, transfers } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { emitEvent } from '../events/events';
import { newId } from '../platform/ids';
import { normalizeAddress } from '../chains/addresses';
import { requiredConfirmationsFor } from '../chains/confirmation-policy';
import type { Protocol } from '../chains/registry';
import { countDepositTransition } from '../platform/metrics';
import { logMoney } from '../platform/money-log';
import { depositEventData, type DepositRecord } from '../views/deposit';
import { depositFrom, selectDeposits } from './records';

/**
 * The deposit state machine (spec "Deposit" states, design.md §4). Chain monitoring calls these,
 * each inside its own transaction, so a state change and its event row commit together.
 *
 *   (transfer attributed to a binding) --recordDeposit--> pending      event deposit.pending
 *   pending   --confirmDeposit-->  confirmed   (required confirmations reached)  event deposit.confirmed
 *   confirmed --completeDeposit--> completed   (block final by the chain's rule) no event (the spec lists none)
 *   pending   --dropDeposit-->     dropped     (its block was orphaned by a reorg) no event
 *
 *   dropped   --restorePendingDeposit--> pending (the same transaction mined again)  no event
 *
 * `dropped` is our extension of the spec's states: the deposit never counted (totals only count
 * confirmed and completed deposits). A confirmed deposit is final and is never dropped. If the
 * same transaction is mined again in another block, it is the same transfer (the scanner moves
 * its row) and the same deposit, pending again: one deposit id and one deposit.pending per payment.
 *
 * Every function is idempotent: calling it again, or in a state it does not apply to, changes
 * nothing, emits nothing and returns false (or the existing deposit for recordDeposit).
 */

/**
 * Creates the pending deposit of a transfer attributed to a deposit binding (transfer.deposit_binding_id
 * set by the scanner) and emits deposit.pending. A second call returns the existing deposit without a
 * second event. Returns null when the transfer is not attributed to a binding, or is dropped and has
 * no deposit yet. Throws when the attribution is inconsistent (organization, family or address of
 * the transfer differ from the binding's): nothing is credited to the wrong reference.
 * requiredConfirmations is the chain's deposit confirmations (registry, already raised by
 * DEPOSIT_CONFIRMATIONS_<CHAIN> when configured, never lowered), raised by the organization's
 * setting; decided here once and stored on the deposit and on its transfer (the column the
 * confirmations job and confirmDeposit read).
 */
export async function recordDeposit(tx: Tx, ctx: ServiceContext, transferId: string): Promise<{ depositId: string } | null> {
  const [transfer] = await tx.select().from(transfers).where(eq(transfers.id, transferId));
  if (!transfer) throw new Error(`recordDeposit: transfer ${transferId} does not exist`);
  if (!transfer.depositBindingId) return null;

  const [existing] = await tx.select({ id: deposits.id }).from(deposits).where(eq(deposits.transferId, transferId));
  if (existing) return { depositId: existing.id };
  if (transfer.status === 'dropped') return null;

  const [binding] = await tx.select().from(depositBindings).where(eq(depositBindings.id, transfer.depositBindingId));
  if (!binding) throw new Error(`recordDeposit: binding ${transfer.depositBindingId} of transfer ${transferId} does not exist`);
  // Never credit across tenants or families: a mismatch means the attribution is wrong.
  if (transfer.organizationId !== binding.organizationId) {
    throw new Error(`recordDeposit: transfer ${transferId} belongs to ${transfer.organizationId}, its binding to ${binding.organizationId}`);
  }
  const protocol = binding.protocol as Protocol;
  const bound = normalizeAddress(protocol, binding.address);
  const sameAddress = bound !== null && normalizeAddress(protocol, transfer.toAddress) === bound;
  // A merchant may attribute by hand a payment into another of its addresses of the family (a
  // stray to a pool address: core/reconciliation/attribute-transfer.ts); detection never does.
  if (transfer.protocol !== binding.protocol || (!sameAddress && transfer.attributedBy === null)) {
    throw new Error(`recordDeposit: transfer ${transferId} (${transfer.protocol} ${transfer.toAddress}) does not match binding ${binding.id}`);
  }
  const chain = ctx.registry.get(transfer.chainId);
  if (!chain) throw new Error(`recordDeposit: unknown chain ${transfer.chainId}`);

  const now = ctx.clock.now();
  const requiredConfirmations = await requiredConfirmationsFor(tx, binding.organizationId, chain, 'deposit');
  const inserted = await tx
    .insert(deposits)
    .values({
      id: newId('dep'),
      organizationId: binding.organizationId,
      bindingId: binding.id,
      depositReference: binding.depositReference,
      transferId,
      status: 'pending',
      requiredConfirmations,
      detectedAt: now,
    })
    .onConflictDoNothing({ target: deposits.transferId })
    .returning({ id: deposits.id });
  if (inserted.length === 0) {
    // A concurrent call recorded it first (and emitted the event).
    const [raced] = await tx.select({ id: deposits.id }).from(deposits).where(eq(deposits.transferId, transferId));
    return { depositId: raced.id };
  }
  await tx.update(transfers).set({ requiredConfirmations }).where(eq(transfers.id, transferId));
  const deposit = await loadDeposit(tx, ctx, inserted[0].id);
  await emitEvent(tx, { organizationId: deposit.organizationId, type: 'deposit.pending', data: depositEventData(deposit), createdAt: now });
  countDepositTransition('pending');
  logDeposit(ctx, 'deposit pending', deposit);
  return { depositId: deposit.depositId };
}

/**
 * pending → confirmed, emitting deposit.confirmed. The caller (the confirmations job, which decides
 * when on the adapter's confirming head) has already written the transfer's confirmations and
 * re-checked its block hash. Returns false, changing nothing, when there is no pending deposit for
 * the transfer, the transfer is dropped, or its confirmations are still below its stored
 * required_confirmations: a guard only, never a second decision (the count shown is from the head,
 * which is at or above the confirming head, so it never holds back what the job confirmed).
 */
export async function confirmDeposit(tx: Tx, ctx: ServiceContext, transferId: string): Promise<boolean> {
  const now = ctx.clock.now();
  const updated = await tx
    .update(deposits)
    .set({ status: 'confirmed', confirmedAt: now })
    .where(
      and(
        eq(deposits.transferId, transferId),
        eq(deposits.status, 'pending'),
        sql`exists (select 1 from ${transfers} t where t.id = ${deposits.transferId} and t.status <> 'dropped' and t.confirmations >= t.required_confirmations)`,
      ),
    )
    .returning({ id: deposits.id });
  if (updated.length === 0) return false;
  // The deposit's payment is credited with its confirmation (the one writer of `credited` for deposits).
  await tx.update(transfers).set({ credited: true }).where(eq(transfers.id, transferId));
  const deposit = await loadDeposit(tx, ctx, updated[0].id);
  await emitEvent(tx, { organizationId: deposit.organizationId, type: 'deposit.confirmed', data: depositEventData(deposit), createdAt: now });
  countDepositTransition('confirmed');
  logDeposit(ctx, 'deposit confirmed', deposit);
  return true;
}

/** confirmed → completed once the deposit's block is final by the chain's finality rule. No event. */
export async function completeDeposit(tx: Tx, ctx: ServiceContext, transferId: string): Promise<boolean> {
  const updated = await tx
    .update(deposits)
    .set({ status: 'completed', completedAt: ctx.clock.now() })
    .where(and(eq(deposits.transferId, transferId), eq(deposits.status, 'confirmed')))
    .returning({ id: deposits.id });
  if (updated.length > 0) countDepositTransition('completed');
  return updated.length > 0;
}

/**
 * pending → dropped when the transfer's block was orphaned (reorg). A confirmed or completed
 * deposit is final and is left as it is (returns false).
 */
export async function dropDeposit(tx: Tx, ctx: ServiceContext, transferId: string): Promise<boolean> {
  const updated = await tx
    .update(deposits)
    .set({ status: 'dropped', droppedAt: ctx.clock.now() })
    .where(and(eq(deposits.transferId, transferId), eq(deposits.status, 'pending')))
    .returning({ id: deposits.id });
  if (updated.length > 0) countDepositTransition('dropped');
  return updated.length > 0;
}

/**
 * dropped → pending when the dropped transfer's transaction was mined again (the scanner moved the
 * transfer back to pending). No event: deposit.pending was sent when it was first seen.
 */
export async function restorePendingDeposit(tx: Tx, ctx: ServiceContext, transferId: string): Promise<boolean> {
  const updated = await tx
    .update(deposits)
    .set({ status: 'pending', droppedAt: null })
    .where(and(eq(deposits.transferId, transferId), eq(deposits.status, 'dropped')))
    .returning({ id: deposits.id });
  if (updated.length > 0) {
    countDepositTransition('pending');
    ctx.logger.info({ transferId, depositId: updated[0].id }, 'a dropped deposit was mined again: pending again');
  }
  return updated.length > 0;
}

async function loadDeposit(tx: Tx, ctx: ServiceContext, depositId: string): Promise<DepositRecord> {
  const [row] = await selectDeposits(tx).where(eq(deposits.id, depositId));
  return depositFrom(ctx.registry, row);
}

function logDeposit(ctx: ServiceContext, line: 'deposit pending' | 'deposit confirmed', d: DepositRecord): void {
  logMoney(ctx.logger, line, {
    depositId: d.depositId,
    organizationId: d.organizationId,
    depositReference: d.depositReference,
    transferId: d.transferId,
    chainId: d.chainId,
    currency: d.currency,
    amount: d.amount,
    address: d.address,
    txHash: d.txHash,
    confirmations: d.confirmations,
    requiredConfirmations: d.requiredConfirmations,
  });
}
