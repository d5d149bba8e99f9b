import { and, desc, eq, gt, lt, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client';
import { chainCheckpoints, scannedBlocks } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import type { BlockRef } from '../chains/adapter-contract';
import type { Checkpoint } from '../chains/checkpoints';

/**
 * Where a chain's scan stands: its checkpoint (started, reset, claimed by compare-and-set), the
 * highest head seen, and the blocks it remembers below the checkpoint. What the scan (scan.ts)
 * moves and the reorg walk-back (reorg.ts) compares against and rewinds.
 */

/** scanned_blocks rows kept below the checkpoint (the deepest reorg we can walk back). */
export const SCANNED_BLOCKS_KEPT = 2048;

export const toCheckpoint = (chainId: string, b: BlockRef): Checkpoint => ({
  chainId,
  blockNumber: b.number,
  blockHash: b.hash,
  blockTimestamp: new Date(b.timestamp * 1000),
});

/**
 * Starts a chain's checkpoint at a block when it has none (first start of a chain: scanning
 * begins at the head, history before the service existed is not scanned). Never moves an
 * existing checkpoint.
 */
export async function initCheckpoint(tx: Tx, chainId: string, block: BlockRef): Promise<boolean> {
  const inserted = await tx
    .insert(chainCheckpoints)
    .values({ ...toCheckpoint(chainId, block), headNumber: block.number, headSeenAt: sql`now()` as never, scannedAt: sql`now()` as never })
    .onConflictDoNothing()
    .returning({ chainId: chainCheckpoints.chainId });
  if (inserted.length > 0) await rememberBlocks(tx, chainId, [block]);
  return inserted.length > 0;
}

/** Replaces a chain's checkpoint (benchmarks and tests that rescan from a known block). */
export async function resetCheckpoint(tx: Tx, chainId: string, block: BlockRef): Promise<void> {
  await tx.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, chainId));
  await initCheckpoint(tx, chainId, block);
}

/** Records scanned blocks (number, hash, parent, time): what a walk-back compares against. */
export async function rememberBlocks(tx: Tx, chainId: string, blocks: BlockRef[]): Promise<void> {
  if (blocks.length === 0) return;
  await tx
    .insert(scannedBlocks)
    .values(blocks.map((h) => ({ chainId, blockNumber: h.number, blockHash: h.hash, parentHash: h.parentHash ?? '', blockTimestamp: new Date(h.timestamp * 1000) })))
    .onConflictDoUpdate({
      target: [scannedBlocks.chainId, scannedBlocks.blockNumber],
      set: { blockHash: sql`excluded.block_hash`, parentHash: sql`excluded.parent_hash`, blockTimestamp: sql`excluded.block_timestamp` },
    });
}

/**
 * Locks the checkpoint row and checks it is still `expected` (compare-and-set). Also raises the
 * highest head seen. False: another worker moved it; the caller's transaction must write nothing.
 */
export async function claimCheckpoint(tx: Tx, expected: Checkpoint, seen?: { head: number; at: Date }): Promise<boolean> {
  const [row] = await tx
    .select({ blockNumber: chainCheckpoints.blockNumber, blockHash: chainCheckpoints.blockHash })
    .from(chainCheckpoints)
    .where(eq(chainCheckpoints.chainId, expected.chainId))
    .for('update');
  if (!row || row.blockNumber !== expected.blockNumber || row.blockHash !== expected.blockHash) return false;
  if (seen) await recordHeadSeen(tx, expected.chainId, seen.head, seen.at);
  return true;
}

/**
 * The highest head the scanner has seen (never lowered): read by assignments for the skew rule.
 * A provider that answers a new head is not failing: the stall check then tells a checkpoint that
 * cannot move apart from providers that do not answer at all.
 */
export async function recordHeadSeen(db: Tx | ServiceContext['db'], chainId: string, head: number, at: Date): Promise<void> {
  await db
    .update(chainCheckpoints)
    .set({ headNumber: sql`greatest(coalesce(${chainCheckpoints.headNumber}, 0), ${head})`, headSeenAt: at, providersFailingSince: null })
    .where(and(eq(chainCheckpoints.chainId, chainId), sql`coalesce(${chainCheckpoints.headNumber}, -1) < ${head}`));
}

/**
 * A scan run of the chain completed (its providers answered and what it saw is stored): the
 * outcome /health and the stall watch judge (stall.ts), whatever would stop it.
 */
export async function recordScanned(db: Tx | ServiceContext['db'], chainId: string, at: Date): Promise<void> {
  await db.update(chainCheckpoints).set({ scannedAt: at }).where(eq(chainCheckpoints.chainId, chainId));
}

/** Scanned blocks at or below a height, newest first (the walk-back's candidates). */
export async function rememberedBlocks(ctx: ServiceContext, chainId: string, atOrBelow: number) {
  return ctx.db
    .select()
    .from(scannedBlocks)
    .where(and(eq(scannedBlocks.chainId, chainId), lt(scannedBlocks.blockNumber, atOrBelow + 1)))
    .orderBy(desc(scannedBlocks.blockNumber))
    .limit(SCANNED_BLOCKS_KEPT);
}

export async function forgetBlocksAbove(tx: Tx, chainId: string, height: number): Promise<void> {
  await tx.delete(scannedBlocks).where(and(eq(scannedBlocks.chainId, chainId), gt(scannedBlocks.blockNumber, height)));
}
