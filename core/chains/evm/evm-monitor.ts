import type { ServiceContext } from '../../context';
import { updateConfirmations, type ConfirmationRun } from './confirmations';
import { evmRpcFor } from './evm-rpc';
import { scanChain, type ScanRun } from './evm-scanner';
import { verifyTokenDecimals } from './token-check';

/**
 * Entry points of the two per-chain jobs (the processors only call these). A chain that is
 * unknown here, not EVM, or whose token decimals do not match is skipped with a reason.
 */
export type Skipped = { skipped: string };

export async function runChainScan(ctx: ServiceContext, chainId: string, budgetMs?: number): Promise<ScanRun | Skipped> {
  const chain = ctx.registry.get(chainId);
  if (!chain || chain.protocol !== 'evm' || !chain.enabled) return { skipped: 'not an enabled EVM chain' };
  const rpc = evmRpcFor(chain);
  if (!(await verifyTokenDecimals(chain, rpc, ctx.logger))) return { skipped: 'token decimals mismatch' };
  return scanChain(ctx, chain, rpc, budgetMs);
}

export async function runChainConfirmations(ctx: ServiceContext, chainId: string): Promise<ConfirmationRun | Skipped> {
  const chain = ctx.registry.get(chainId);
  if (!chain || chain.protocol !== 'evm' || !chain.enabled) return { skipped: 'not an enabled EVM chain' };
  const rpc = evmRpcFor(chain);
  if (!(await verifyTokenDecimals(chain, rpc, ctx.logger))) return { skipped: 'token decimals mismatch' };
  return updateConfirmations(ctx, chain, rpc);
}
