import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { headWakeupJobId } from '../../core/jobs/catalog';
import type { Processor } from './types';

/**
 * Scans a chain's new blocks (core/detection/scan.ts, any protocol family). A scan woken by a
 * pushed head is followed at once by that head's confirmation count, so a transfer confirmed by
 * the new block completes without waiting for the confirmations schedule.
 */
export const chainScanProcessor: Processor<'chain-scan'> = async (ctx, job) => {
  const run = await runChainScan(ctx, job.data.chainId);
  const { head, chainId } = job.data;
  if (head !== undefined) await ctx.jobs.enqueue('chain-confirmations', { chainId }, { jobId: headWakeupJobId('chain-confirmations', chainId, head) });
  return run;
};

/** Counts confirmations of a chain's pending transfers (core/detection/confirmations.ts). */
export const chainConfirmationsProcessor: Processor<'chain-confirmations'> = async (ctx, job) => runChainConfirmations(ctx, job.data.chainId);
