import { and, desc, eq, gt, lt, ne, sql } from 'drizzle-orm';
import { getAddress, id as keccakId } from 'ethers';
import type { Tx } from '../../../db/client';
import { scannedBlocks, transfers } from '../../../db/schema';
import { getCheckpoint, setCheckpoint, type Checkpoint } from '../../checkpoints';
import type { ServiceContext } from '../../context';
import { dropTransfers, findWatchedAddresses, recordTransfers, type WatchedAddress } from '../../transfers/record-transfer';
import type { Chain, Currency } from '../registry';
import { countTransfersRecorded } from '../../metrics/metrics';
import { RangeTooLargeError, type EvmRpc, type RpcBlockHeader, type RpcLog } from './evm-rpc';

/**
 * The EVM log scanner (design.md §4): one eth_getLogs per block range for the Transfer topic of
 * every configured token, `to` matched against every pool address in one query, transfers and
 * the checkpoint written in one transaction. One scan per chain at a time (a Postgres advisory
 * transaction lock), whatever the number of workers. Reorgs are found by re-checking the
 * checkpoint's block hash before each range and walking back through scanned_blocks.
 */

export const TRANSFER_TOPIC = keccakId('Transfer(address,address,uint256)');

export const MIN_RANGE = 1;
export const MAX_RANGE = 2000;
const INITIAL_RANGE = 500;
/** scanned_blocks rows kept below the checkpoint (the deepest reorg we can walk back). */
const SCANNED_BLOCKS_KEPT = 2048;

export type ScanStatus = 'scanned' | 'idle' | 'locked' | 'reorg' | 'unstable' | 'initialized' | 'behind';

export interface ScanStep {
  status: ScanStatus;
  fromBlock?: number;
  toBlock?: number;
  /** Transfers newly recorded. */
  recorded: number;
  /** Logs of the configured tokens in the range (matched or not). */
  logs: number;
}

/** Per process and chain: the adaptive range size. */
const rangeSizes = new Map<string, number>();

export function currentRangeSize(chainId: string): number {
  return rangeSizes.get(chainId) ?? INITIAL_RANGE;
}

/** Back to the initial range size (benchmarks compare runs from the same start). */
export function resetRangeSize(chainId: string): void {
  rangeSizes.delete(chainId);
}

function lockKey(name: string, chainId: string) {
  return sql`pg_try_advisory_xact_lock(hashtextextended(${`${name}:${chainId}`}, 0))`;
}

export async function tryChainLock(tx: Tx, name: string, chainId: string): Promise<boolean> {
  const rows = (await tx.execute(sql`select ${lockKey(name, chainId)} as ok`)) as unknown as { ok: boolean }[];
  return rows[0]?.ok === true;
}

/** Token contracts of a chain, by lower-case address. */
function tokenMap(chain: Chain): Map<string, { currency: Currency; address: string }> {
  const out = new Map<string, { currency: Currency; address: string }>();
  for (const t of Object.values(chain.tokens)) if (t?.address) out.set(t.address.toLowerCase(), { currency: t.currency, address: getAddress(t.address) });
  return out;
}

/**
 * Starts a chain's checkpoint at a block when it has none (first start of a chain: scanning
 * begins at the head, history before the service existed is not scanned).
 */
export async function initCheckpoint(tx: Tx, chainId: string, header: RpcBlockHeader): Promise<Checkpoint> {
  const cp = { chainId, blockNumber: header.number, blockHash: header.hash, blockTimestamp: new Date(header.timestamp * 1000) };
  await setCheckpoint(tx, cp);
  await rememberBlocks(tx, chainId, [header]);
  return cp;
}

async function rememberBlocks(tx: Tx, chainId: string, headers: RpcBlockHeader[]): Promise<void> {
  if (headers.length === 0) return;
  await tx
    .insert(scannedBlocks)
    .values(headers.map((h) => ({ chainId, blockNumber: h.number, blockHash: h.hash, parentHash: h.parentHash, blockTimestamp: new Date(h.timestamp * 1000) })))
    .onConflictDoUpdate({
      target: [scannedBlocks.chainId, scannedBlocks.blockNumber],
      set: { blockHash: sql`excluded.block_hash`, parentHash: sql`excluded.parent_hash`, blockTimestamp: sql`excluded.block_timestamp` },
    });
}

const lastBehindWarning = new Map<string, number>();
/** Operators must see a provider stuck behind the checkpoint: nothing is scanned meanwhile. */
function warnBehind(ctx: ServiceContext, chainId: string, head: number, checkpoint: number): void {
  const now = Date.now();
  if (now - (lastBehindWarning.get(chainId) ?? 0) < 60_000) return;
  lastBehindWarning.set(chainId, now);
  ctx.logger.warn({ chainId, head, checkpoint }, 'provider head is behind the scan checkpoint: waiting for it to catch up');
}

/** One range: check continuity, fetch logs, record matches, move the checkpoint. */
export async function scanChainOnce(ctx: ServiceContext, chain: Chain, rpc: EvmRpc): Promise<ScanStep> {
  const tokens = tokenMap(chain);
  return ctx.db.transaction(async (tx) => {
    if (!(await tryChainLock(tx, 'chain-scan', chain.chainId))) return { status: 'locked', recorded: 0, logs: 0 };
    const cp = await getCheckpoint(tx, chain.chainId);
    if (!cp) {
      const head = await rpc.header('latest');
      if (!head) throw new Error(`${chain.chainId}: no head block`);
      await initCheckpoint(tx, chain.chainId, head);
      ctx.logger.info({ chainId: chain.chainId, block: head.number }, 'chain checkpoint initialised at the head');
      return { status: 'initialized', toBlock: head.number, recorded: 0, logs: 0 };
    }

    const headNumber = await rpc.blockNumber();
    // A provider behind our checkpoint (a lagging node, a local chain restarted from an older state)
    // proves nothing yet: wait until it reaches the checkpoint, then compare hashes.
    if (headNumber < cp.blockNumber) {
      warnBehind(ctx, chain.chainId, headNumber, cp.blockNumber);
      return { status: 'behind', recorded: 0, logs: 0 };
    }
    const atCheckpoint = await rpc.header(cp.blockNumber);
    if (!atCheckpoint || atCheckpoint.hash !== cp.blockHash) {
      await handleReorg(tx, ctx, chain, rpc, cp);
      return { status: 'reorg', recorded: 0, logs: 0 };
    }
    if (headNumber <= cp.blockNumber) return { status: 'idle', recorded: 0, logs: 0 };

    const fromBlock = cp.blockNumber + 1;
    let range = currentRangeSize(chain.chainId);
    let toBlock: number;
    let toHeader: RpcBlockHeader | null;
    let logs: RpcLog[];
    for (;;) {
      toBlock = Math.min(headNumber, fromBlock + range - 1);
      toHeader = await rpc.header(toBlock);
      if (!toHeader) return { status: 'unstable', recorded: 0, logs: 0 };
      try {
        logs = tokens.size === 0 ? [] : await rpc.logs({ fromBlock, toBlock, addresses: [...tokens.values()].map((t) => t.address), topic0: TRANSFER_TOPIC });
        break;
      } catch (err) {
        if (!(err instanceof RangeTooLargeError) || range <= MIN_RANGE) throw err;
        range = Math.max(MIN_RANGE, Math.floor(range / 2));
        rangeSizes.set(chain.chainId, range);
        ctx.logger.info({ chainId: chain.chainId, range }, 'provider refused the log range: shrinking');
      }
    }
    // The range is consistent if its last block did not change while we read its logs, and the
    // checkpoint is still its ancestor.
    const toAgain = await rpc.header(toBlock);
    const cpAgain = await rpc.header(cp.blockNumber);
    if (!toAgain || toAgain.hash !== toHeader.hash) return { status: 'unstable', recorded: 0, logs: 0 };
    if (!cpAgain || cpAgain.hash !== cp.blockHash) {
      await handleReorg(tx, ctx, chain, rpc, cp);
      return { status: 'reorg', recorded: 0, logs: 0 };
    }

    type Parsed = { log: RpcLog; currency: Currency; token: string; from: string; to: string; amount: bigint };
    const parsed: Parsed[] = [];
    for (const log of logs) {
      const token = tokens.get(log.address.toLowerCase());
      if (!token || log.removed || log.topics.length !== 3 || log.topics[0] !== TRANSFER_TOPIC) continue;
      if (log.blockNumber < fromBlock || log.blockNumber > toBlock) continue;
      parsed.push({
        log,
        currency: token.currency,
        token: token.address,
        from: getAddress(`0x${log.topics[1].slice(26)}`),
        to: getAddress(`0x${log.topics[2].slice(26)}`),
        amount: log.data === '0x' ? 0n : BigInt(log.data),
      });
    }
    // One query for the distinct recipients of the whole range, whatever the pool size.
    const watched = await findWatchedAddresses(tx, 'evm', [...new Set(parsed.map((p) => p.to))]);
    const matched = parsed.filter((p) => watched.has(p.to.toLowerCase()) && p.amount > 0n);

    // Block times of the matched blocks: from the log when the node gives it (blockTimestamp, as
    // anvil, reth and geth ≥ 1.16 do), else from the block header (whose hash must match the log's).
    const headers = new Map<number, RpcBlockHeader>([[toBlock, toHeader]]);
    const blockTimes = new Map<number, number>([[toBlock, toHeader.timestamp]]);
    for (const p of matched) {
      const n = p.log.blockNumber;
      if (blockTimes.has(n)) continue;
      if (p.log.blockTimestamp !== undefined) {
        blockTimes.set(n, p.log.blockTimestamp);
        continue;
      }
      const h = await rpc.header(n);
      if (!h || h.hash !== p.log.blockHash) return { status: 'unstable', recorded: 0, logs: 0 };
      headers.set(n, h);
      blockTimes.set(n, h.timestamp);
    }
    for (const p of matched) {
      const h = headers.get(p.log.blockNumber);
      if (h && h.hash !== p.log.blockHash) return { status: 'unstable', recorded: 0, logs: 0 };
    }

    const recorded = await recordTransfers(
      tx,
      ctx,
      matched.map((p) => ({
        observed: {
          chainId: chain.chainId,
          protocol: 'evm' as const,
          currency: p.currency,
          tokenAddress: p.token,
          amount: p.amount,
          fromAddress: p.from,
          toAddress: p.to,
          txHash: p.log.transactionHash,
          logIndex: p.log.logIndex,
          blockNumber: p.log.blockNumber,
          blockHash: p.log.blockHash,
          blockTimestamp: new Date(blockTimes.get(p.log.blockNumber)! * 1000),
        },
        watched: watched.get(p.to.toLowerCase()) as WatchedAddress,
      })),
    );
    await rememberBlocks(tx, chain.chainId, [...headers.values()]);
    await setCheckpoint(tx, { chainId: chain.chainId, blockNumber: toBlock, blockHash: toHeader.hash, blockTimestamp: new Date(toHeader.timestamp * 1000) });
    await tx.delete(scannedBlocks).where(and(eq(scannedBlocks.chainId, chain.chainId), lt(scannedBlocks.blockNumber, toBlock - SCANNED_BLOCKS_KEPT)));
    if (range < MAX_RANGE) rangeSizes.set(chain.chainId, Math.min(MAX_RANGE, range * 2));
    return { status: 'scanned', fromBlock, toBlock, recorded, logs: parsed.length };
  });
}

/**
 * The checkpoint's block is no longer canonical: walk back through scanned_blocks to the newest
 * block whose hash still matches (the fork point), drop the pending transfers of orphaned blocks,
 * and move the checkpoint back so the next range rescans from there.
 */
async function handleReorg(tx: Tx, ctx: ServiceContext, chain: Chain, rpc: EvmRpc, cp: Checkpoint): Promise<void> {
  const known = await tx
    .select()
    .from(scannedBlocks)
    .where(and(eq(scannedBlocks.chainId, chain.chainId), lt(scannedBlocks.blockNumber, cp.blockNumber + 1)))
    .orderBy(desc(scannedBlocks.blockNumber))
    .limit(SCANNED_BLOCKS_KEPT);
  let fork: Checkpoint | null = null;
  for (const row of known) {
    const h = await rpc.header(row.blockNumber);
    if (h && h.hash === row.blockHash) {
      fork = { chainId: chain.chainId, blockNumber: row.blockNumber, blockHash: h.hash, blockTimestamp: new Date(h.timestamp * 1000) };
      break;
    }
  }
  if (!fork) {
    // Deeper than what we remember: restart below the oldest remembered block.
    const lowest = known.length > 0 ? known[known.length - 1].blockNumber : cp.blockNumber;
    const h = await rpc.header(Math.max(0, lowest - 1));
    if (!h) throw new Error(`${chain.chainId}: cannot find a fork point below block ${lowest}`);
    fork = { chainId: chain.chainId, blockNumber: h.number, blockHash: h.hash, blockTimestamp: new Date(h.timestamp * 1000) };
    ctx.logger.error({ chainId: chain.chainId, lowest }, 'reorg deeper than the remembered blocks: rescanning from below them');
  }
  // Transfers above the fork point whose block is no longer canonical.
  const above = await tx
    .select({ id: transfers.id, blockNumber: transfers.blockNumber, blockHash: transfers.blockHash, status: transfers.status })
    .from(transfers)
    .where(and(eq(transfers.chainId, chain.chainId), ne(transfers.status, 'dropped'), gt(transfers.blockNumber, fork.blockNumber)));
  const canonical = new Map<number, string | null>();
  const orphaned: string[] = [];
  for (const t of above) {
    if (!canonical.has(t.blockNumber)) canonical.set(t.blockNumber, (await rpc.header(t.blockNumber))?.hash ?? null);
    if (canonical.get(t.blockNumber) === t.blockHash) continue;
    if (t.status === 'confirmed') {
      ctx.logger.error({ chainId: chain.chainId, transferId: t.id, block: t.blockNumber }, 'a confirmed transfer was reorged out: its credit stays final');
      continue;
    }
    orphaned.push(t.id);
  }
  const dropped = await dropTransfers(tx, ctx, orphaned);
  await tx.delete(scannedBlocks).where(and(eq(scannedBlocks.chainId, chain.chainId), gt(scannedBlocks.blockNumber, fork.blockNumber)));
  await setCheckpoint(tx, fork);
  ctx.logger.warn({ chainId: chain.chainId, from: cp.blockNumber, forkPoint: fork.blockNumber, dropped }, 'chain reorganisation: rescanning from the fork point');
}

export interface ScanRun {
  ranges: number;
  recorded: number;
  lastStatus: ScanStatus;
}

/**
 * Scans range after range until caught up with the head or the time budget is spent (a job run).
 * `unstable` (the chain moved under us) retries at once a few times.
 */
export async function scanChain(ctx: ServiceContext, chain: Chain, rpc: EvmRpc, budgetMs = 5000): Promise<ScanRun> {
  const started = Date.now();
  const run: ScanRun = { ranges: 0, recorded: 0, lastStatus: 'idle' };
  let unstable = 0;
  while (Date.now() - started < budgetMs) {
    const step = await scanChainOnce(ctx, chain, rpc);
    countTransfersRecorded(chain.chainId, step.recorded);
    run.lastStatus = step.status;
    run.recorded += step.recorded;
    if (step.status === 'scanned') run.ranges++;
    if (step.status === 'unstable' && ++unstable <= 3) continue;
    if (step.status === 'idle' || step.status === 'locked' || step.status === 'unstable' || step.status === 'behind') break;
  }
  return run;
}
