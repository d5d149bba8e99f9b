import { and, eq } from 'drizzle-orm';
import { deposits, orders, transfers } from '../../../db/schema';
import type { ServiceContext } from '../../context';
import { completeDeposit, confirmDeposit } from '../../deposits/lifecycle';
import { recomputeOrder } from '../../orders/order-state';
import type { Chain } from '../registry';
import type { EvmRpc } from './evm-rpc';

/**
 * Confirmation counting (design.md §4): confirmations = head − block + 1. At the required count
 * (the order's or the deposit's, else the chain's) the block hash is re-checked against the chain,
 * the transfer becomes confirmed, and the order is recomputed / the deposit confirmed — in one
 * transaction, under a row lock, so two runs never confirm twice. A confirmed credit is final.
 * Deposits whose block is final by the chain's rule are completed.
 */

export interface ConfirmationRun {
  head: number;
  updated: number;
  confirmed: number;
  completed: number;
  /** Transfers at their count whose block hash no longer matches (left to the scanner's reorg handling). */
  mismatched: number;
}

/** Required confirmations of one transfer: its order's, else its deposit's, else the chain's. */
export function requiredConfirmations(chain: Chain, t: { orderRequired: number | null; depositRequired: number | null }): number {
  return t.orderRequired ?? t.depositRequired ?? chain.orderConfirmations;
}

export async function updateConfirmations(ctx: ServiceContext, chain: Chain, rpc: EvmRpc): Promise<ConfirmationRun> {
  const head = await rpc.blockNumber();
  const run: ConfirmationRun = { head, updated: 0, confirmed: 0, completed: 0, mismatched: 0 };
  const pending = await ctx.db
    .select({
      id: transfers.id,
      blockNumber: transfers.blockNumber,
      blockHash: transfers.blockHash,
      confirmations: transfers.confirmations,
      orderId: transfers.orderId,
      orderRequired: orders.requiredConfirmations,
      depositRequired: deposits.requiredConfirmations,
    })
    .from(transfers)
    .leftJoin(orders, eq(orders.id, transfers.orderId))
    .leftJoin(deposits, eq(deposits.transferId, transfers.id))
    .where(and(eq(transfers.chainId, chain.chainId), eq(transfers.status, 'pending')))
    .orderBy(transfers.blockNumber);

  const hashes = new Map<number, string | null>();
  for (const t of pending) {
    const confirmations = Math.max(0, head - t.blockNumber + 1);
    const required = requiredConfirmations(chain, t);
    if (confirmations < required) {
      if (confirmations !== t.confirmations) {
        await ctx.db
          .update(transfers)
          .set({ confirmations })
          .where(and(eq(transfers.id, t.id), eq(transfers.status, 'pending')));
        run.updated++;
      }
      continue;
    }
    if (!hashes.has(t.blockNumber)) hashes.set(t.blockNumber, (await rpc.header(t.blockNumber))?.hash ?? null);
    if (hashes.get(t.blockNumber) !== t.blockHash) {
      run.mismatched++;
      continue;
    }
    const confirmed = await ctx.db.transaction(async (tx) => {
      const [row] = await tx
        .select({ status: transfers.status, counted: transfers.counted, orderId: transfers.orderId, depositBindingId: transfers.depositBindingId })
        .from(transfers)
        .where(eq(transfers.id, t.id))
        .for('update');
      if (!row || row.status !== 'pending') return false;
      const [deposit] = await tx.select({ id: deposits.id }).from(deposits).where(eq(deposits.transferId, t.id));
      await tx
        .update(transfers)
        .set({ status: 'confirmed', confirmations, confirmedAt: ctx.clock.now(), credited: row.counted || !!deposit })
        .where(eq(transfers.id, t.id));
      if (deposit) await confirmDeposit(tx, ctx, t.id);
      if (row.orderId) await recomputeOrder(tx, ctx, row.orderId);
      return true;
    });
    if (confirmed) run.confirmed++;
  }

  // Confirmed deposits: keep counting, complete at finality.
  const finalizedBlock = await finalizedBlockNumber(chain, rpc, head);
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

/** The newest final block by the chain's finality rule. */
export async function finalizedBlockNumber(chain: Chain, rpc: EvmRpc, head: number): Promise<number | null> {
  if (chain.finality.kind === 'depth') return head - chain.finality.blocks + 1;
  if (chain.finality.kind === 'finalized-tag') return (await rpc.header('finalized'))?.number ?? null;
  return null;
}
