import { runChainConfirmations, runChainScan } from '../../core/chains/evm/evm-monitor';
import type { Processor } from './types';

/** Scans a chain's new blocks (core/chains/evm/evm-scanner.ts). */
export const chainScanProcessor: Processor<'chain-scan'> = async (ctx, job) => runChainScan(ctx, job.data.chainId);

/** Counts confirmations of a chain's pending transfers (core/chains/evm/confirmations.ts). */
export const chainConfirmationsProcessor: Processor<'chain-confirmations'> = async (ctx, job) => runChainConfirmations(ctx, job.data.chainId);
