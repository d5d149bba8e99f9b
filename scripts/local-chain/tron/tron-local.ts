import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { chainCheckpoints, scannedBlocks, transfers } from '../../../db/schema';
import type { ServiceContext } from '../../../core/service/context';
import { applyTronLocalState, TRON_LOCAL_CHAIN_ID, TRON_LOCAL_STATE_KEY, type TronLocalState } from '../../../core/chains/tron/tron-local-state';
import { getServiceState, setServiceState } from '../../../core/platform/service-state';
import { dropTransfers } from '../../../core/detection/record-transfer';
import { TronLocalNode } from './tron-local-node';

/**
 * Starts tron-local for NETWORK=local (with `npm start` or `npm run chain`): state under
 * DATA_DIR/tron-local, block time and solidification lag from configuration, and its URL and test
 * USDT recorded in service_state for every other process. A node with a new genesis (its state
 * file was removed) is a new chain: what was pending on the old one is dropped and scanning
 * restarts at the new head.
 */
export async function startTronLocal(ctx: ServiceContext, port: number): Promise<{ node: TronLocalNode; state: TronLocalState }> {
  const { blockTimeMs, solidificationLag } = ctx.config.tronLocal;
  const node = new TronLocalNode({ port, stateFile: path.join(ctx.config.dataDir, 'tron-local', 'state.json'), blockTimeMs, solidificationLag });
  const rpcUrl = await node.start();
  try {
    const existing = await getServiceState<TronLocalState>(ctx.db, TRON_LOCAL_STATE_KEY);
    const state: TronLocalState = { rpcUrl, genesisHash: node.genesisHash, token: node.token, startedAt: new Date().toISOString(), solidificationLag };
    await ctx.db.transaction(async (tx) => {
      await setServiceState(tx, TRON_LOCAL_STATE_KEY, state);
      if (existing && existing.genesisHash !== node.genesisHash) {
        const stale = await tx
          .select({ id: transfers.id })
          .from(transfers)
          .where(and(eq(transfers.chainId, TRON_LOCAL_CHAIN_ID), eq(transfers.status, 'pending')));
        await dropTransfers(tx, ctx, stale.map((t) => t.id));
        await tx.delete(scannedBlocks).where(eq(scannedBlocks.chainId, TRON_LOCAL_CHAIN_ID));
        await tx.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, TRON_LOCAL_CHAIN_ID));
      }
    });
    applyTronLocalState(ctx.registry, state, ctx.config.chainOverrides);
    ctx.logger.info({ chainId: TRON_LOCAL_CHAIN_ID, rpcUrl, token: node.token, blockTimeMs, solidificationLag }, 'tron-local running');
    return { node, state };
  } catch (err) {
    await node.stop();
    throw err;
  }
}
