import { and, eq, lt, sql } from 'drizzle-orm';
import { chainCheckpoints, scannedBlocks } from '../../db/schema';
import { prepareStatement } from '../../db/client';
import { elapsedMs } from '../platform/clock';
import { getCheckpoint, type Checkpoint } from '../chains/checkpoints';
import { claimCheckpoint, initCheckpoint, recordHeadSeen, recordScanned, rememberBlocks, SCANNED_BLOCKS_KEPT, toCheckpoint } from './scan-position';
import type { ServiceContext } from '../service/context';
import { findWatchedAddresses, recordRefundPayments, recordTransfers } from './record-transfer';
import { findRefundDestinations, WATCHED_DESTINATIONS_SQL } from '../refunds/refund-settlement';
import { RangeTooLargeError, UnstableChainError, type BlockRef, type ChainAdapter, type ChainTransfer, type WatchedAddressSource } from '../chains/adapter-contract';
import { rangeEndBlock } from './heights';
import { applyReorg, findForkPoint } from './reorg';
import { countTransfersRecorded } from '../platform/metrics';
import { forgetOldHeadObservations, recordHeadObservation } from './head-observations';
import { forgetNonCanonicalEvidence, sameDecidingObservations, type CheckedEvidence } from './canonical-evidence';

/**
 * The scan job of one chain, for every protocol family (design.md §4, §4b):
 *   1. read the checkpoint (plain read, no transaction);
 *   2. ask the adapter for the head, the checkpoint's block and the next range's transfers — all
 *      RPC happens here, outside any transaction;
 *   3. check that the head observations that will date the range's blocks saw canonical blocks
 *      (canonical-evidence.ts: forgets the others; RPC, so before the transaction);
 *   4. write the range's transfers and the new checkpoint in one short transaction that first
 *      checks, under a row lock, that the checkpoint is still the one the range started from
 *      (compare-and-set). A worker that lost the race rolls back and reports `conflict`.
 * There is no scan lock: two workers scanning the same chain at once do the same RPC work and
 * one of them writes (README "Detection").
 */

export const MIN_RANGE = 1;
export const MAX_RANGE = 2000;
const INITIAL_RANGE = 500;
/**
 * Transfers of the configured tokens (whatever their recipient) a range is sized to hold: after a
 * range that held more, the next is sized to about this many at the density it saw, and a range
 * grows only while it stays under. A catch-up of a busy chain (mainnet USDT: tens of transfers a
 * block) then holds a bounded list in a worker's memory instead of 2,000 blocks' worth.
 */
export const TRANSFERS_PER_RANGE = 20_000;

export type ScanStatus = 'scanned' | 'idle' | 'conflict' | 'reorg' | 'unstable' | 'initialized' | 'behind';

export interface ScanStep {
  status: ScanStatus;
  fromBlock?: number;
  toBlock?: number;
  /** Transfers newly recorded. */
  recorded: number;
  /** Transfers of the configured tokens in the range (matched or not). */
  logs: number;
  head?: number;
}

export function currentRangeSize(ctx: ServiceContext, chainId: string): number {
  return ctx.detection.rangeSizes.get(chainId) ?? INITIAL_RANGE;
}


/** Operators must see a provider stuck behind the checkpoint: nothing is scanned meanwhile. */
function warnBehind(ctx: ServiceContext, chainId: string, head: number, checkpoint: number): void {
  const now = elapsedMs();
  const last = ctx.detection.behindWarnings.get(chainId);
  if (last !== undefined && now - last < 60_000) return;
  ctx.detection.behindWarnings.set(chainId, now);
  ctx.logger.warn({ chainId, head, checkpoint }, 'provider head is behind the scan checkpoint: waiting for it to catch up');
}

/** One range: check continuity, fetch transfers, then record them and move the checkpoint. */
export async function scanChainOnce(ctx: ServiceContext, adapter: ChainAdapter): Promise<ScanStep> {
  const chainId = adapter.chain.chainId;
  const cp = await getCheckpoint(ctx.db, chainId);
  if (!cp) {
    const askedAt = ctx.clock.now();
    const head = await adapter.head();
    await recordHeadObservation(ctx.db, { chainId, head: head.number, askedAt, answeredAt: ctx.clock.now(), hash: head.hash, blockTimestamp: head.timestamp });
    const created = await ctx.db.transaction((tx) => initCheckpoint(tx, chainId, head));
    if (created) ctx.logger.info({ chainId, block: head.number }, 'chain checkpoint initialised at the head');
    return { status: created ? 'initialized' : 'conflict', toBlock: head.number, recorded: 0, logs: 0, head: head.number };
  }

  const askedAt = ctx.clock.now();
  const head = await adapter.head();
  // What the provider answered is evidence of when blocks were mined (attribution.ts), whatever
  // the scan does next; recorded on its own, before the range's transaction.
  const look = { chainId, head: head.number, askedAt, answeredAt: ctx.clock.now(), hash: head.hash, blockTimestamp: head.timestamp };
  await recordHeadObservation(ctx.db, look);
  // A provider behind our checkpoint (a lagging node, a local chain restarted from an older state)
  // proves nothing yet: wait until it reaches the checkpoint, then compare hashes.
  if (head.number < cp.blockNumber) {
    warnBehind(ctx, chainId, head.number, cp.blockNumber);
    return { status: 'behind', recorded: 0, logs: 0, head: head.number };
  }
  // Recorded before the range is read: a head that moves while the range cannot be scanned (a
  // provider failing getLogs) is a checkpoint stall, not a head stall.
  await recordHeadSeen(ctx.db, chainId, head.number, ctx.clock.now());
  const atCheckpoint = head.number === cp.blockNumber ? head : await adapter.blockAt(cp.blockNumber);
  if (!atCheckpoint || atCheckpoint.hash !== cp.blockHash) return handleReorg(ctx, adapter, cp, head.number);
  if (head.number <= cp.blockNumber) return { status: 'idle', recorded: 0, logs: 0, head: head.number };

  const fromBlock = cp.blockNumber + 1;
  let range = currentRangeSize(ctx, chainId);
  let toBlock: number;
  let toHeader: BlockRef | null;
  let found: ChainTransfer[];
  try {
    for (;;) {
      toBlock = Math.min(head.number, fromBlock + range - 1);
      // A range ends on a block: skipped heights at its end (Solana) are read again with the next range.
      toHeader = toBlock === head.number ? head : await rangeEndBlock(adapter, fromBlock, toBlock, head);
      if (!toHeader) return { status: 'unstable', recorded: 0, logs: 0, head: head.number };
      toBlock = toHeader.number;
      try {
        found = await adapter.transfersInRange(fromBlock, toBlock, watchedSource(ctx, adapter));
        break;
      } catch (err) {
        if (!(err instanceof RangeTooLargeError) || range <= MIN_RANGE) throw err;
        range = Math.max(MIN_RANGE, Math.floor(range / 2));
        ctx.detection.rangeSizes.set(chainId, range);
        ctx.logger.info({ chainId, range }, 'provider refused the log range: shrinking');
      }
    }
  } catch (err) {
    if (err instanceof UnstableChainError) return { status: 'unstable', recorded: 0, logs: 0, head: head.number };
    // Any other failure (a provider error on one of the range's calls): the next try reads half as
    // much. Families that read block by block make one call per block, so with a small share of
    // failing calls a long range almost never completes and a scanner behind would never catch up;
    // the range grows back as ranges succeed.
    if (range > MIN_RANGE) {
      ctx.detection.rangeSizes.set(chainId, Math.max(MIN_RANGE, Math.floor(range / 2)));
      ctx.logger.info({ chainId, range: Math.max(MIN_RANGE, Math.floor(range / 2)) }, 'reading the range failed: shrinking it for the next try');
    }
    throw err;
  }
  // The range is consistent if its last block did not change while we read it, and the
  // checkpoint is still its ancestor.
  const toAgain = await adapter.blockAt(toBlock);
  if (!toAgain || toAgain.hash !== toHeader.hash) return { status: 'unstable', recorded: 0, logs: 0, head: head.number };
  const cpAgain = await adapter.blockAt(cp.blockNumber);
  if (!cpAgain || cpAgain.hash !== cp.blockHash) return handleReorg(ctx, adapter, cp, head.number);
  // A transfer must lie in the range and carry its block's hash where we know it.
  const inRange = found.filter((t) => t.blockNumber >= fromBlock && t.blockNumber <= toBlock && t.amount > 0n);
  if (inRange.some((t) => t.blockNumber === toBlock && t.blockHash !== toHeader!.hash)) return { status: 'unstable', recorded: 0, logs: 0, head: head.number };
  // The observations that will say when the range's blocks were mined must have seen canonical
  // blocks (canonical-evidence.ts): checked here, where RPC is allowed.
  let checked: CheckedEvidence;
  try {
    const evidence = await forgetNonCanonicalEvidence(
      ctx.db,
      adapter,
      chainId,
      {
        transferBlocks: new Map(inRange.map((t) => [t.blockNumber, t.blockHash])),
        known: new Map([
          [toBlock, toHeader.hash],
          [cp.blockNumber, cp.blockHash],
        ]),
        providerHead: head.number,
      },
      look,
    );
    checked = evidence.checked;
    if (evidence.forgotten > 0) ctx.logger.info({ chainId, fromBlock, toBlock, forgotten: evidence.forgotten }, 'head observations of orphaned blocks forgotten: they date no transfer');
  } catch (err) {
    if (err instanceof UnstableChainError) return { status: 'unstable', recorded: 0, logs: 0, head: head.number };
    throw err;
  }

  const end = toHeader;
  const outcome = await ctx.db.transaction(async (tx) => {
    if (!(await claimCheckpoint(tx, cp))) return null; // the head was recorded before the range was read
    // The evidence changed since it was checked (a look or a forget by another process): read again.
    if (!(await sameDecidingObservations(tx, chainId, checked))) return 'unstable' as const;
    // One query for the distinct recipients of the whole range, whatever the pool size.
    // Keyed by the family's one normalised form, the form the adapter reports recipients in.
    const watched = await findWatchedAddresses(tx, adapter.protocol, [...new Set(inRange.map((t) => t.toAddress))]);
    const matched = inRange.filter((t) => watched.has(t.toAddress));
    let recorded = await recordTransfers(
      tx,
      ctx,
      matched.map((t) => ({ observed: t, protocol: adapter.protocol, watched: watched.get(t.toAddress)! })),
    );
    // The merchant's refund and payout payments: approved refunds' destinations are watched too
    // (never a pool address: the claim refuses those), one indexed query for the range's recipients.
    const destinations = await findRefundDestinations(tx, chainId, adapter.protocol, [...new Set(inRange.filter((t) => !watched.has(t.toAddress)).map((t) => t.toAddress))]);
    if (destinations.size > 0) {
      recorded += await recordRefundPayments(
        tx,
        ctx,
        inRange.flatMap((t) => (destinations.get(t.toAddress) ?? []).map((destination) => ({ observed: t, protocol: adapter.protocol, destination }))),
      );
    }
    await rememberBlocks(tx, chainId, [end]);
    await tx
      .update(chainCheckpoints)
      .set({ ...toCheckpoint(chainId, end), updatedAt: ctx.clock.now() })
      .where(eq(chainCheckpoints.chainId, chainId));
    await tx.delete(scannedBlocks).where(and(eq(scannedBlocks.chainId, chainId), lt(scannedBlocks.blockNumber, toBlock - SCANNED_BLOCKS_KEPT)));
    // Now and then (every thousandth block), not on every range.
    if (Math.floor(fromBlock / 1000) !== Math.floor(toBlock / 1000)) await forgetOldHeadObservations(tx, chainId, ctx.clock.now());
    return recorded;
  });
  if (outcome === null) return { status: 'conflict', recorded: 0, logs: 0, head: head.number };
  if (outcome === 'unstable') return { status: 'unstable', recorded: 0, logs: 0, head: head.number };
  ctx.detection.rangeSizes.set(chainId, nextRangeSize(range, toBlock - fromBlock + 1, found.length));
  return { status: 'scanned', fromBlock, toBlock, recorded: outcome, logs: found.length, head: head.number };
}

/** After a range of `blocks` blocks that held `transfers`: twice the range, or fewer blocks where the chain is dense. */
function nextRangeSize(range: number, blocks: number, transfers: number): number {
  const grown = Math.min(MAX_RANGE, range * 2);
  if (transfers === 0) return grown;
  return Math.max(MIN_RANGE, Math.min(grown, Math.floor((blocks * TRANSFERS_PER_RANGE) / transfers)));
}

/** The family's pool addresses (all of them, or those that can receive now), for adapters that query per address (Solana). */
const watchedStatement = prepareStatement<{ protocol: string }>(
  'detection.watched_addresses',
  sql`select address from pool_addresses where protocol = ${sql.placeholder('protocol')}`,
);
const activeStatement = prepareStatement<{ protocol: string }>(
  'detection.active_addresses',
  sql`select address from pool_addresses where protocol = ${sql.placeholder('protocol')} and status in ('allocated', 'bound', 'cooldown')
      union ${WATCHED_DESTINATIONS_SQL}`,
);

function watchedSource(ctx: ServiceContext, adapter: ChainAdapter): WatchedAddressSource {
  const query = async (statement: typeof watchedStatement) => (await statement.run<{ address: string }>(ctx.db, { protocol: adapter.protocol })).map((r) => r.address);
  return { all: () => query(watchedStatement), active: () => query(activeStatement) };
}

/** Walk back (RPC, no transaction), then apply the fork point (one transaction, compare-and-set). */
async function handleReorg(ctx: ServiceContext, adapter: ChainAdapter, cp: Checkpoint, head: number): Promise<ScanStep> {
  const fork = await findForkPoint(ctx, adapter, cp);
  const applied = await applyReorg(ctx, adapter, cp, fork, head);
  return { status: applied ? 'reorg' : 'conflict', recorded: 0, logs: 0, head };
}


export interface ScanRun {
  ranges: number;
  recorded: number;
  lastStatus: ScanStatus;
  head?: number;
}

/**
 * Scans range after range until caught up with the head or the time budget is spent (a job run).
 * `unstable` (the chain moved under us) retries at once a few times.
 */
export async function scanChain(ctx: ServiceContext, adapter: ChainAdapter, budgetMs = 5000): Promise<ScanRun> {
  const started = elapsedMs();
  const run: ScanRun = { ranges: 0, recorded: 0, lastStatus: 'idle' };
  let unstable = 0;
  while (elapsedMs() - started < budgetMs) {
    const step = await scanChainOnce(ctx, adapter);
    // Metrics after the range's transaction: what was committed (core/metrics).
    countTransfersRecorded(adapter.chain.chainId, step.recorded);
    run.lastStatus = step.status;
    run.recorded += step.recorded;
    if (step.head !== undefined) run.head = step.head;
    if (step.status === 'scanned') run.ranges++;
    if (step.status === 'unstable' && ++unstable <= 3) continue;
    if (step.status === 'idle' || step.status === 'conflict' || step.status === 'unstable' || step.status === 'behind') break;
  }
  // Every step answered and stored what it saw: the run completed (a thrown step never gets here).
  await recordScanned(ctx.db, adapter.chain.chainId, ctx.clock.now());
  return run;
}
