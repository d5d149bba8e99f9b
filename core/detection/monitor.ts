import { createChainAdapter } from '../chains/adapters';
import type { Chain } from '../chains/registry';
import type { ServiceContext } from '../service/context';
import { ProviderUnavailableError, type ChainAdapter } from '../chains/adapter-contract';
import { updateConfirmations, type ConfirmationRun } from './confirmations';
import { scanChain, type ScanRun } from './scan';
import { isDatabaseError } from '../../db/client';
import { elapsedMs } from '../platform/clock';
import { checkChainStall, noteProviderFailure, noteProviderSuccess } from './stall';

/**
 * Entry points of the two per-chain jobs, for every protocol family (the processors only call
 * these). A chain that is unknown, disabled, of a family without an adapter, or whose tokens fail
 * the adapter's check is skipped with a reason.
 */
export type Skipped = { skipped: string };

/** The process's adapter of a chain (its RPC client keeps back-off state across job runs). */
export function adapterFor(ctx: ServiceContext, chain: Chain): ChainAdapter | null {
  const key = `${chain.chainId}|${chain.rpcUrls.join(',')}|${Object.values(chain.tokens).map((t) => t?.address ?? '-').join(',')}`;
  let adapter = ctx.detection.adapters.get(key);
  if (!adapter) {
    const created = createChainAdapter(chain, { logger: ctx.logger, clock: ctx.clock });
    if (!created) return null;
    adapter = created;
    ctx.detection.adapters.set(key, adapter);
  }
  return adapter;
}

/** The chain's adapter once its tokens passed the check (cached per process on the context), else why not. */
async function readyAdapter(ctx: ServiceContext, chainId: string): Promise<ChainAdapter | Skipped> {
  const chain = ctx.registry.get(chainId);
  if (!chain || !chain.enabled) return { skipped: 'not an enabled chain' };
  const adapter = adapterFor(ctx, chain);
  if (!adapter) return { skipped: `no adapter for the ${chain.protocol} family` };
  const key = `${chain.chainId}|${Object.values(chain.tokens).map((t) => t?.address ?? '-').join(',')}`;
  let verdict = ctx.detection.tokenVerdicts.get(key);
  if (!verdict) {
    verdict = await adapter.verifyTokens();
    ctx.detection.tokenVerdicts.set(key, verdict);
    if (verdict.ok) ctx.logger.info({ chainId }, 'token decimals verified');
    else ctx.logger.error({ chainId, problems: verdict.problems }, `refusing to scan ${chainId}: token decimals mismatch (${verdict.problems.join('; ')})`);
  }
  return verdict.ok ? adapter : { skipped: 'token decimals mismatch' };
}

/**
 * One scan job run, then the chain's stall check: after a successful run, and after a run its
 * providers failed (a provider outage long enough is a stall too). Not after a run its database
 * failed: the head or checkpoint it could not store would be blamed on a healthy chain (issue 32).
 * That failure is the job's error, logged and retried, and /health reports the database.
 */
export async function runChainScan(ctx: ServiceContext, chainId: string, budgetMs?: number): Promise<ScanRun | Skipped> {
  let judge = true;
  try {
    const adapter = await readyAdapter(ctx, chainId);
    if ('skipped' in adapter) return adapter;
    const run = await scanChain(ctx, adapter, budgetMs);
    await noteProviderSuccess(ctx, chainId);
    return run;
  } catch (err) {
    if (err instanceof ProviderUnavailableError) await noteProviderFailure(ctx, chainId);
    else if (isDatabaseError(err)) {
      judge = false;
      ctx.detection.databaseFailedAt = elapsedMs();
    }
    throw err;
  } finally {
    if (judge) await checkChainStall(ctx, chainId).catch((err) => ctx.logger.error({ err, chainId }, 'chain stall check failed'));
  }
}

export async function runChainConfirmations(ctx: ServiceContext, chainId: string): Promise<ConfirmationRun | Skipped> {
  const adapter = await readyAdapter(ctx, chainId);
  if ('skipped' in adapter) return adapter;
  return updateConfirmations(ctx, adapter);
}
