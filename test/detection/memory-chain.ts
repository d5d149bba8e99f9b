import { randomBytes } from 'node:crypto';
import { hexlify } from 'ethers';
import type { Chain, Currency } from '../../core/chains/registry';
import { RangeTooLargeError, type BlockRef, type ChainAdapter, type ChainTransfer, type TokenVerdict } from '../../core/chains/adapter-contract';

/**
 * An in-memory chain behind the ChainAdapter interface, so the detection core is tested apart
 * from any real chain. Blocks are mined by the test with the transfers it wants; reorgs replace
 * blocks from a height with new hashes; knobs make the adapter misbehave as providers do:
 * duplicate answers, a missing block (gap), a range limit, a hook run while a range is read.
 */
export interface MemoryTransfer {
  txHash: string;
  to: string;
  amount: bigint;
  currency?: Currency;
}

interface MemoryBlock extends BlockRef {
  transfers: MemoryTransfer[];
}

const hash = () => hexlify(randomBytes(32));

export class MemoryChain implements ChainAdapter {
  readonly protocol = 'evm' as const;
  calls = 0;
  blocks: MemoryBlock[] = [];
  /** Every transfer is answered twice (a provider repeating logs). */
  duplicateAnswers = false;
  /** Heights the provider pretends not to have (a node lagging behind its own head). */
  missing = new Set<number>();
  /** Heights whose blockAt fails (a provider erroring on that call). */
  failing = new Set<number>();
  /** Largest range transfersInRange accepts. */
  maxRange = Infinity;
  /**
   * Every Nth block read inside transfersInRange fails (0: none), as one call per block fails on a
   * provider with a small error rate (Tron, Solana read a range block by block).
   */
  failEveryNthBlockRead = 0;
  private blockReads = 0;
  /** Run after the transfers of a range were read (another worker, a reorg under us...). */
  onRangeRead: (() => Promise<void>) | null = null;

  constructor(
    readonly chain: Chain,
    startTime: number,
  ) {
    this.blocks.push({ number: 0, hash: hash(), parentHash: hash(), timestamp: startTime, transfers: [] });
  }

  get tip(): MemoryBlock {
    return this.blocks[this.blocks.length - 1];
  }

  /** Mines one block with these transfers, stamped `timestamp` (default: one second after the tip). */
  mine(transfers: MemoryTransfer[] = [], timestamp?: number): MemoryBlock {
    const block = { number: this.tip.number + 1, hash: hash(), parentHash: this.tip.hash, timestamp: timestamp ?? this.tip.timestamp + 1, transfers };
    this.blocks.push(block);
    return block;
  }

  mineEmpty(n: number): void {
    for (let i = 0; i < n; i++) this.mine();
  }

  /** Replaces every block from `height` on with new empty ones (same count): their transfers are gone unless re-mined. */
  reorgFrom(height: number): void {
    const count = this.blocks.length - height;
    this.blocks = this.blocks.slice(0, height);
    for (let i = 0; i < count; i++) this.mine();
  }

  async head(): Promise<BlockRef> {
    this.calls++;
    return strip(this.tip);
  }

  async finalizedBlockNumber(head: number): Promise<number | null> {
    return head - 10 + 1;
  }

  async blockAt(height: number): Promise<BlockRef | null> {
    this.calls++;
    if (this.failing.has(height)) throw new Error(`provider error at block ${height}`);
    if (this.missing.has(height)) return null;
    const b = this.blocks[height];
    return b ? strip(b) : null;
  }

  async transfersInRange(fromBlock: number, toBlock: number): Promise<ChainTransfer[]> {
    this.calls++;
    if (toBlock - fromBlock + 1 > this.maxRange) throw new RangeTooLargeError(`range ${fromBlock}-${toBlock} too large`);
    const out: ChainTransfer[] = [];
    for (const b of this.blocks.slice(fromBlock, toBlock + 1)) {
      if (this.failEveryNthBlockRead > 0 && ++this.blockReads % this.failEveryNthBlockRead === 0) throw new Error(`provider error reading block ${b.number}`);
      const perTx = new Map<string, number>();
      b.transfers.forEach((t, logIndex) => {
        const indexInTx = perTx.get(t.txHash) ?? 0;
        perTx.set(t.txHash, indexInTx + 1);
        const record: ChainTransfer = {
          chainId: this.chain.chainId,
          txHash: t.txHash,
          indexInTx,
          blockLogIndex: logIndex,
          currency: t.currency ?? 'USDT',
          tokenAddress: '0x00000000000000000000000000000000000000aa',
          fromAddress: '0x00000000000000000000000000000000000000bb',
          toAddress: t.to,
          amount: t.amount,
          blockNumber: b.number,
          blockHash: b.hash,
          blockTimestamp: b.timestamp,
        };
        out.push(record);
        if (this.duplicateAnswers) out.push({ ...record });
      });
    }
    if (this.onRangeRead) {
      const hook = this.onRangeRead;
      this.onRangeRead = null;
      await hook();
    }
    return out;
  }

  async verifyTokens(): Promise<TokenVerdict> {
    return { ok: true, problems: [] };
  }
}

function strip(b: MemoryBlock): BlockRef {
  return { number: b.number, hash: b.hash, parentHash: b.parentHash, timestamp: b.timestamp };
}

export const newTxHash = hash;
