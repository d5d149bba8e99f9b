import { eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { chainCheckpoints } from '../../db/schema';

/**
 * How far a chain has been scanned. Orders never expire past what was scanned (design.md §4).
 * Written by the detection core, read by it and by orders (expiry): in core/chains/, which both
 * import, so orders need not import core/detection/ (which imports orders). Chain families never
 * import it (they know no database; test/foundation/layering.test.ts).
 */
export interface Checkpoint {
  chainId: string;
  blockNumber: number;
  blockHash: string;
  blockTimestamp: Date;
}

export async function getCheckpoint(db: DbOrTx, chainId: string): Promise<Checkpoint | null> {
  const [row] = await db.select().from(chainCheckpoints).where(eq(chainCheckpoints.chainId, chainId));
  return row ? { chainId: row.chainId, blockNumber: row.blockNumber, blockHash: row.blockHash, blockTimestamp: row.blockTimestamp } : null;
}

/** Moves a chain's checkpoint (the scanner does, in the transaction that records the range's transfers). */
export async function setCheckpoint(db: DbOrTx, cp: Checkpoint): Promise<void> {
  await db
    .insert(chainCheckpoints)
    .values({ ...cp, updatedAt: sql`now()` as never })
    .onConflictDoUpdate({
      target: chainCheckpoints.chainId,
      set: { blockNumber: cp.blockNumber, blockHash: cp.blockHash, blockTimestamp: cp.blockTimestamp, updatedAt: sql`now()` },
    });
}

export async function deleteCheckpoint(db: DbOrTx, chainId: string): Promise<void> {
  await db.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, chainId));
}
