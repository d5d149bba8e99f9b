import { and, eq, gt, inArray } from 'drizzle-orm';
import { chainCheckpoints, deposits, transfers } from '../../db/schema';
import { formatAmount } from '../platform/amounts';
import type { ServiceContext } from '../service/context';
import { emitEvent } from '../events/events';
import { forgetHeadObservationsAbove } from './head-observations';
import { dropTransfers } from './record-transfer';
import type { ChainAdapter } from '../chains/adapter-contract';
import { newestBlockAtOrBelow } from './heights';
import type { Checkpoint } from '../chains/checkpoints';
import { claimCheckpoint, forgetBlocksAbove, rememberedBlocks } from './scan-position';

/**
 * Reorganisations (design.md §4, §4b). The checkpoint's block is no longer canonical:
 * findForkPoint walks back through scanned_blocks to the newest block whose hash still matches
 * (RPC only, no transaction); applyReorg then, in one transaction guarded by the checkpoint:
 * - drops the pending transfers of orphaned blocks (never credited; orders and deposits recompute);
 * - marks confirmed ones `reorged`: a reorg deeper than the required confirmations never takes
 *   back a credit; alert.reorg_beyond_confirmations tells the organization. If the same transfer
 *   (chain, tx hash, index in tx) is seen again, the recorder moves it to its new block and
 *   restores `confirmed`;
 * - moves the checkpoint back to the fork point so the next range rescans from there.
 */

export async function findForkPoint(ctx: ServiceContext, adapter: ChainAdapter, cp: Checkpoint): Promise<Checkpoint> {
  const chainId = adapter.chain.chainId;
  const known = await rememberedBlocks(ctx, chainId, cp.blockNumber);
  for (const row of known) {
    const h = await adapter.blockAt(row.blockNumber);
    if (h && h.hash === row.blockHash) return { chainId, blockNumber: h.number, blockHash: h.hash, blockTimestamp: new Date(h.timestamp * 1000) };
  }
  // Deeper than what we remember: restart below the oldest remembered block.
  const lowest = known.length > 0 ? known[known.length - 1].blockNumber : cp.blockNumber;
  // On the newest block below them: a height there may have been skipped (Solana).
  const below = await newestBlockAtOrBelow(adapter, Math.max(0, lowest - 1), Math.max(-1, lowest - 1 - 1000));
  const h = below === 'none' ? null : below;
  if (!h) throw new Error(`${chainId}: cannot find a fork point below block ${lowest}`);
  ctx.logger.error({ chainId, lowest }, 'reorg deeper than the remembered blocks: rescanning from below them');
  return { chainId, blockNumber: h.number, blockHash: h.hash, blockTimestamp: new Date(h.timestamp * 1000) };
}

export async function applyReorg(ctx: ServiceContext, adapter: ChainAdapter, cp: Checkpoint, fork: Checkpoint, head: number): Promise<boolean> {
  const chainId = adapter.chain.chainId;
  // Transfers above the fork point and the canonical hash of their blocks, read before the transaction.
  const above = await ctx.db
    .select({ id: transfers.id, blockNumber: transfers.blockNumber, blockHash: transfers.blockHash })
    .from(transfers)
    .where(and(eq(transfers.chainId, chainId), inArray(transfers.status, ['pending', 'confirmed']), gt(transfers.blockNumber, fork.blockNumber)));
  const canonical = new Map<number, string | null>();
  for (const t of above) if (!canonical.has(t.blockNumber)) canonical.set(t.blockNumber, (await adapter.blockAt(t.blockNumber))?.hash ?? null);
  const orphanedIds = above.filter((t) => canonical.get(t.blockNumber) !== t.blockHash).map((t) => t.id);

  const result = await ctx.db.transaction(async (tx) => {
    if (!(await claimCheckpoint(tx, cp, { head, at: ctx.clock.now() }))) return null;
    const rows =
      orphanedIds.length === 0
        ? []
        : await tx
            .select({
              id: transfers.id,
              status: transfers.status,
              blockNumber: transfers.blockNumber,
              blockHash: transfers.blockHash,
              organizationId: transfers.organizationId,
              orderId: transfers.orderId,
              depositBindingId: transfers.depositBindingId,
              txHash: transfers.txHash,
              amount: transfers.amount,
              currency: transfers.currency,
            })
            .from(transfers)
            .where(inArray(transfers.id, orphanedIds))
            .for('update');
    // Only rows still on the block we found orphaned (a concurrent rescan may have moved them).
    const stillOrphaned = rows.filter((r) => canonical.get(r.blockNumber) !== r.blockHash);
    const pending = stillOrphaned.filter((r) => r.status === 'pending').map((r) => r.id);
    const dropped = await dropTransfers(tx, ctx, pending);
    const deep = stillOrphaned.filter((r) => r.status === 'confirmed');
    for (const t of deep) {
      await tx.update(transfers).set({ status: 'reorged' }).where(and(eq(transfers.id, t.id), eq(transfers.status, 'confirmed')));
      const [deposit] = await tx.select({ id: deposits.id, reference: deposits.depositReference }).from(deposits).where(eq(deposits.transferId, t.id));
      // The transfer's depth below the checkpoint (its confirmations then), not the reorg's length (README, OpenAPI).
      const depth = cp.blockNumber - t.blockNumber + 1;
      ctx.logger.error(
        { chainId, transferId: t.id, block: t.blockNumber, depth, orderId: t.orderId, depositId: deposit?.id },
        'a confirmed transfer was reorged out deeper than its required confirmations: its credit stays',
      );
      if (t.organizationId) {
        await emitEvent(tx, {
          organizationId: t.organizationId,
          type: 'alert.reorg_beyond_confirmations',
          createdAt: ctx.clock.now(),
          data: {
            chainId,
            transferId: t.id,
            txHash: t.txHash,
            blockNumber: t.blockNumber,
            blockHash: t.blockHash,
            depth,
            // A decimal string in token units, like every amount on the wire.
            amount: formatAmount(t.amount, ctx.registry.tokenDecimals(chainId, t.currency)),
            currency: t.currency,
            orderId: t.orderId,
            depositId: deposit?.id ?? null,
            depositReference: deposit?.reference ?? null,
          },
        });
      }
    }
    await forgetBlocksAbove(tx, chainId, fork.blockNumber);
    await forgetHeadObservationsAbove(tx, chainId, fork.blockNumber);
    await tx
      .update(chainCheckpoints)
      .set({ blockNumber: fork.blockNumber, blockHash: fork.blockHash, blockTimestamp: fork.blockTimestamp, updatedAt: ctx.clock.now() })
      .where(eq(chainCheckpoints.chainId, chainId));
    return { dropped, reorged: deep.length };
  });
  if (!result) return false;
  ctx.logger.warn({ chainId, from: cp.blockNumber, forkPoint: fork.blockNumber, ...result }, 'chain reorganisation: rescanning from the fork point');
  return true;
}

