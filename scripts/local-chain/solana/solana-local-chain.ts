import { and, eq } from 'drizzle-orm';
import { chainCheckpoints, scannedBlocks, transfers } from '../../../db/schema';
import type { ServiceContext } from '../../../core/service/context';
import { applySolanaLocalState, SOLANA_LOCAL_CHAIN_ID, SOLANA_LOCAL_STATE_KEY, type SolanaLocalState } from '../../../core/chains/solana/solana-local-state';
import { getServiceState, setServiceState } from '../../../core/platform/service-state';
import { dropTransfers } from '../../../core/detection/record-transfer';
import { startSolanaLocal, type RunningSolanaLocal } from './solana-local';

/**
 * Starts solana-local for NETWORK=local (with `npm start` or `npm run chain`): ledger under
 * DATA_DIR/solana-local, slot interval and finalization lag from configuration, and its URL, test
 * mints and lags recorded in service_state for every other process. A node with a new genesis (its
 * ledger was removed) is a new chain: what was pending on the old one is dropped and scanning
 * restarts at the new head. A restart of the same ledger continues the same chain.
 */
export async function startSolanaLocalChain(
  ctx: ServiceContext,
  port: number,
  options: { dataDir?: string | null } = {},
): Promise<{ chain: RunningSolanaLocal; state: SolanaLocalState }> {
  const { slotMs, finalizationLag } = ctx.config.solanaLocal;
  const chain = await startSolanaLocal({ dataDir: options.dataDir === undefined ? ctx.config.dataDir : options.dataDir, port, slotMs, finalizationLag });
  try {
    const existing = await getServiceState<SolanaLocalState>(ctx.db, SOLANA_LOCAL_STATE_KEY);
    const state = solanaLocalStateOf(chain);
    await ctx.db.transaction(async (tx) => {
      await setServiceState(tx, SOLANA_LOCAL_STATE_KEY, state);
      if (existing && existing.genesisHash !== state.genesisHash) {
        const stale = await tx
          .select({ id: transfers.id })
          .from(transfers)
          .where(and(eq(transfers.chainId, SOLANA_LOCAL_CHAIN_ID), eq(transfers.status, 'pending')));
        await dropTransfers(tx, ctx, stale.map((t) => t.id));
        await tx.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
        await tx.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, SOLANA_LOCAL_CHAIN_ID));
      }
    });
    applySolanaLocalState(ctx.registry, state, ctx.config.chainOverrides);
    ctx.logger.info({ chainId: SOLANA_LOCAL_CHAIN_ID, rpcUrl: chain.url, mints: state.mints, slotMs, finalizationLag }, 'solana-local running');
    return { chain, state };
  } catch (err) {
    await chain.stop();
    throw err;
  }
}

/** The service_state record of a running solana-local (`rpcUrl`: another URL in front of it, e.g. a test proxy). */
export function solanaLocalStateOf(chain: RunningSolanaLocal, rpcUrl = chain.url): SolanaLocalState {
  return {
    rpcUrl,
    genesisHash: chain.info.genesisHash,
    mints: { USDC: chain.info.mints.USDC, USDT: chain.info.mints.USDT },
    confirmationLag: chain.node.confirmationLag,
    finalizationLag: chain.node.finalizationLag,
    startedAt: new Date().toISOString(),
  };
}
