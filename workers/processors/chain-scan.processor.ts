import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import type { Processor } from './types';

/** Scans a chain's new blocks (core/detection/scan.ts, any protocol family). */
export const chainScanProcessor: Processor<'chain-scan'> = async (ctx, job) => runChainScan(ctx, job.data.chainId);

/** Counts confirmations of a chain's pending transfers (core/detection/confirmations.ts). */
export const chainConfirmationsProcessor: Processor<'chain-confirmations'> = async (ctx, job) => runChainConfirmations(ctx, job.data.chainId);
