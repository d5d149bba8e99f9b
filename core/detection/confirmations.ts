import { and, eq, inArray, sql } from 'drizzle-orm';
import { deposits, transfers } from '../../db/schema';
import type { Chain } from '../chains/registry';
import type { ServiceContext } from '../service/context';
import { completeDeposit, confirmDeposit } from '../deposits/lifecycle';
import { recomputeRefund } from '../refunds/refund-settlement';
import { recomputeOrder } from '../orders/order-state';
import type { ChainAdapter } from '../chains/adapter-contract';
import { recordHeadObservation } from './head-observations';
import { transferRequiredConfirmationsSql } from '../chains/confirmation-policy';
import { logMoney, tokenAmount } from '../platform/money-log';
import { elapsedMs } from '../platform/clock';

/**
 * Confirmation counting (design.md §4): confirmations = head − block + 1. At the transfer's stored
 * required count (transfers.required_confirmations: its order's or its deposit's, fixed when it was
 * attributed; the chain's order confirmations when recorded unattributed), counted from the adapter's confirmingHead where
 * it has one (Tron: confirmed only once solidified), the block hash is re-checked against the chain,
 * the transfer becomes confirmed, and the order is recomputed / the deposit confirmed — in one
 * transaction, under a row lock, so two runs never confirm twice. A confirmed credit is final.
 * Deposits whose block is final by the chain's rule are completed. Every adapter call happens
 * before the transaction that uses its answer; the row lock and the status check are the
 * compare-and-set that lets any number of workers run this job at once.
 */

/** Time a run spends verifying blocks that hold only unattributed transfers, after those that credit. */
const STRAY_BLOCKS_BUDGET_MS = 2000;

export interface ConfirmationRun {
  head: number;
  updated: number;
  confirmed: number;
  completed: number;
  /** Transfers at their count whose block hash no longer matches (left to the scanner's reorg handling). */
  mismatched: number;
}

/** The "payment confirmed" line, written once the confirming transaction committed. */
function logPaymentConfirmed(
  ctx: ServiceContext,
  chain: Chain,
  t: { id: string; organizationId: string | null; orderId: string | null; depositId: string | null; txHash: string; blockNumber: number; currency: string; amount: bigint | string },
  head: number,
): void {
  logMoney(ctx.logger, 'payment confirmed', {
    transferId: t.id,
    organizationId: t.organizationId,
    orderId: t.orderId,
    depositId: t.depositId,
    chainId: chain.chainId,
    currency: t.currency,
    amount: tokenAmount(ctx.registry, chain.chainId, t.currency, t.amount),
    txHash: t.txHash,
    blockNumber: t.blockNumber,
    confirmations: head - t.blockNumber + 1,
  });
}

export async function updateConfirmations(ctx: ServiceContext, adapter: ChainAdapter): Promise<ConfirmationRun> {
  const chain = adapter.chain;
  const askedAt = ctx.clock.now();
  const headBlock = await adapter.head();
  const head = headBlock.number;
  // Another look at the head: evidence for attribution (head-observations.ts), as the scan's.
  await recordHeadObservation(ctx.db, { chainId: chain.chainId, head, askedAt, answeredAt: ctx.clock.now(), hash: headBlock.hash, blockTimestamp: headBlock.timestamp });
  // The count shown is from the head; the decision may be from a lower height (Tron: solidification).
  const deciding = adapter.confirmingHead ? Math.min(head, await adapter.confirmingHead(head)) : head;
  const run: ConfirmationRun = { head, updated: 0, confirmed: 0, completed: 0, mismatched: 0 };
  // Every pending transfer's count, in one statement.
  const counted = await ctx.db
    .update(transfers)
    .set({ confirmations: sql`greatest(0, ${head} - ${transfers.blockNumber} + 1)` })
    .where(
      and(
        eq(transfers.chainId, chain.chainId),
        eq(transfers.status, 'pending'),
        sql`${transfers.confirmations} <> greatest(0, ${head} - ${transfers.blockNumber} + 1)`,
      ),
    )
    .returning({ id: transfers.id });
  run.updated += counted.length;

  const ready = (
    await ctx.db
      .select({
        id: transfers.id,
        blockNumber: transfers.blockNumber,
        blockHash: transfers.blockHash,
        orderId: transfers.orderId,
        organizationId: transfers.organizationId,
        txHash: transfers.txHash,
        currency: transfers.currency,
        amount: transfers.amount,
        depositId: deposits.id,
        refundId: transfers.refundId,
      })
      .from(transfers)
      .leftJoin(deposits, eq(deposits.transferId, transfers.id))
      .where(
        and(
          eq(transfers.chainId, chain.chainId),
          eq(transfers.status, 'pending'),
          // At its stored required count (the chain's order confirmations for an unattributed row
          // recorded before migration 0010, which stored none).
          sql`${deciding} - ${transfers.blockNumber} + 1 >= ${transferRequiredConfirmationsSql(chain, transfers.requiredConfirmations)}`,
        ),
      )
      .orderBy(transfers.blockNumber)
  );

  // Block by block, in order: each block's hash is re-checked (one call per block) and its transfers
  // are confirmed at once, so a provider failing midway (the job then fails and is retried) keeps
  // the blocks already done. Checking every hash first and confirming after would let a backlog of
  // N blocks succeed only with (1 − error rate)^N: under a flaky provider it would never drain.
  const blocks = new Map<number, typeof ready>();
  for (const t of ready) blocks.set(t.blockNumber, [...(blocks.get(t.blockNumber) ?? []), t]);
  // Blocks that credit an order or a deposit go first (still in block order), then those holding
  // only unattributed transfers: after an outage the catch-up leaves a backlog of strays pending,
  // one read each, and a payer's confirmation must not wait behind it.
  const credits = (inBlock: typeof ready) => inBlock.some((t) => t.orderId !== null || t.depositId !== null || t.refundId !== null);
  const inTurn = [...blocks].sort(([, a], [, b]) => Number(credits(b)) - Number(credits(a)));
  let straysFrom: number | null = null;
  for (const [blockNumber, inBlock] of inTurn) {
    if (!credits(inBlock)) {
      // The strays' backlog drains over several runs (at least one block each), so the next run and
      // its new payments are not held behind it; a stray block the provider fails to answer ends the
      // strays' turn, not the run (deposits still complete below).
      straysFrom ??= elapsedMs();
      if (elapsedMs() - straysFrom > STRAY_BLOCKS_BUDGET_MS) break;
      try {
        await verifyAndConfirm(ctx, adapter, head, blockNumber, inBlock, run);
      } catch (err) {
        ctx.logger.warn({ chainId: chain.chainId, blockNumber, err: { message: (err as Error).message } }, 'could not verify a block of unattributed transfers: left for the next run');
        break;
      }
      continue;
    }
    await verifyAndConfirm(ctx, adapter, head, blockNumber, inBlock, run);
  }

  // Confirmed deposits: keep counting, complete at finality.
  const finalizedBlock = await adapter.finalizedBlockNumber(head);
  const open = await ctx.db
    .select({ id: transfers.id, blockNumber: transfers.blockNumber, confirmations: transfers.confirmations })
    .from(transfers)
    .innerJoin(deposits, eq(deposits.transferId, transfers.id))
    .where(and(eq(transfers.chainId, chain.chainId), eq(transfers.status, 'confirmed'), eq(deposits.status, 'confirmed')));
  for (const t of open) {
    const confirmations = Math.max(0, head - t.blockNumber + 1);
    const final = finalizedBlock !== null && t.blockNumber <= finalizedBlock;
    await ctx.db.transaction(async (tx) => {
      if (confirmations !== t.confirmations) {
        await tx.update(transfers).set({ confirmations }).where(eq(transfers.id, t.id));
        run.updated++;
      }
      if (final && (await completeDeposit(tx, ctx, t.id))) run.completed++;
    });
  }
  return run;
}

/** Re-checks one block's hash and confirms its transfers that are still in it. */
async function verifyAndConfirm(ctx: ServiceContext, adapter: ChainAdapter, head: number, blockNumber: number, inBlock: (ReadyTransfer & { blockHash: string })[], run: ConfirmationRun): Promise<void> {
  const hash = (await adapter.blockAt(blockNumber))?.hash ?? null;
  const verified = inBlock.filter((t) => t.blockHash === hash);
  run.mismatched += inBlock.length - verified.length;
  await confirmVerified(ctx, adapter.chain, head, verified, run);
}

type ReadyTransfer = {
  id: string;
  blockNumber: number;
  orderId: string | null;
  organizationId: string | null;
  txHash: string;
  currency: string;
  amount: bigint | string;
  depositId: string | null;
  /** A payment of an approved refund or payout (core/refunds/refund-settlement.ts). */
  refundId: string | null;
};

/** Confirms transfers whose block hash was just verified: unattributed ones in bulk, the others one transaction each. */
async function confirmVerified(ctx: ServiceContext, chain: Chain, head: number, verified: ReadyTransfer[], run: ConfirmationRun): Promise<void> {
  // Unattributed transfers: nothing to recompute, confirmed in bulk.
  const plain = verified.filter((t) => !t.orderId && !t.depositId && !t.refundId).map((t) => t.id);
  for (let i = 0; i < plain.length; i += 1000) {
    const done = await ctx.db
      .update(transfers)
      .set({ status: 'confirmed', confirmedAt: ctx.clock.now() })
      .where(and(inArray(transfers.id, plain.slice(i, i + 1000)), eq(transfers.status, 'pending')))
      .returning({ id: transfers.id });
    run.confirmed += done.length;
    const confirmedIds = new Set(done.map((d) => d.id));
    for (const t of verified) if (confirmedIds.has(t.id)) logPaymentConfirmed(ctx, chain, t, head);
  }

  // Attributed ones: one transaction each, under a row lock, with the domain's recompute.
  for (const t of verified.filter((v) => v.orderId || v.depositId || v.refundId)) {
    const confirmations = head - t.blockNumber + 1;
    const confirmed = await ctx.db.transaction(async (tx) => {
      const [row] = await tx
        .select({ status: transfers.status, counted: transfers.counted, orderId: transfers.orderId, refundId: transfers.refundId })
        .from(transfers)
        .where(eq(transfers.id, t.id))
        .for('update');
      if (!row || row.status !== 'pending') return false;
      const [deposit] = await tx.select({ id: deposits.id }).from(deposits).where(eq(deposits.transferId, t.id));
      await tx
        .update(transfers)
        .set({ status: 'confirmed', confirmations, confirmedAt: ctx.clock.now() })
        .where(eq(transfers.id, t.id));
      // `credited` is written by the deposit and order state code only: confirming the deposit
      // credits its transfer; the order's one state function credits its counted confirmed ones.
      if (deposit) await confirmDeposit(tx, ctx, t.id);
      if (row.orderId) await recomputeOrder(tx, ctx, row.orderId);
      if (row.refundId) await recomputeRefund(tx, ctx, row.refundId);
      return true;
    });
    if (confirmed) {
      run.confirmed++;
      logPaymentConfirmed(ctx, chain, t, head);
    }
  }
}
