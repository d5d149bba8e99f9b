import { SKIPPED, type BlockRef, type ChainAdapter } from '../chains/adapter-contract';

/**
 * Walking heights that may have no block (Solana skipped slots, design.md §4b): the scan ends its
 * ranges on a block and the fork walk restarts below on one. For families where every height has
 * a block (no `heightAt`) these are a single blockAt call.
 */

/**
 * The newest block at or below `height` and above `floor`; 'none' when every height of
 * (floor, height] was skipped; null when one of them is not produced yet (or unknown to the provider).
 */
export async function newestBlockAtOrBelow(adapter: ChainAdapter, height: number, floor: number): Promise<BlockRef | 'none' | null> {
  if (!adapter.heightAt) return height > floor ? adapter.blockAt(height) : 'none';
  for (let h = height; h > floor; h--) {
    const answer = await adapter.heightAt(h);
    if (answer !== SKIPPED) return answer;
  }
  return 'none';
}

/**
 * The block a range fromBlock..toBlock (toBlock below the head) ends on: its newest block; when the
 * whole range was skipped, the next block above it (the head at most, which always has one).
 * Null: a height is not produced yet (the provider moved back), the range is read again later.
 */
export async function rangeEndBlock(adapter: ChainAdapter, fromBlock: number, toBlock: number, head: BlockRef): Promise<BlockRef | null> {
  const below = await newestBlockAtOrBelow(adapter, toBlock, fromBlock - 1);
  if (below !== 'none') return below;
  for (let h = toBlock + 1; h < head.number; h++) {
    const answer = await adapter.heightAt!(h);
    if (answer !== SKIPPED) return answer;
  }
  return head;
}
