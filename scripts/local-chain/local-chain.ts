import path from 'node:path';
import { and, eq, inArray } from 'drizzle-orm';
import { scannedBlocks, transfers } from '../../db/schema';
import type { ServiceContext } from '../../core/service/context';
import { applyLocalChainState, LOCAL_CHAIN_ID, LOCAL_CHAIN_STATE_KEY, type LocalChainState } from '../../core/chains/evm/local-chain-state';
import { resetCheckpoint } from '../../core/detection/scan-position';
import { getServiceState, setServiceState } from '../../core/platform/service-state';
import { dropTransfers } from '../../core/detection/record-transfer';
import { startAnvil, type RunningAnvil } from './anvil';
import { localProvider } from './local-provider';
import type { JsonRpcProvider } from 'ethers';
import { deployTestTokens } from './test-tokens';

/**
 * The local chain (NETWORK=local), development tooling only: anvil with USDT/USDC/DAI test tokens
 * deployed on first start. Its record in service_state (core/chains/evm/local-chain-state.ts) tells
 * every other process where the chain and its tokens are.
 */
/**
 * Run by the process that starts anvil, once it listens: deploys the test tokens when the chain
 * is new, in which case the local checkpoint restarts at the deployment block and pending
 * transfers whose transaction is not on the new chain are dropped. The chain is recognised by the
 * hash of the token deployment's block, not block 0: anvil gives block 0 a new hash when it
 * reloads a short chain's state, while blocks ≥ 1 keep theirs. Blocks lost on a hard kill (mined
 * after anvil's last state dump) come back as a reorg, which the scanner handles as one.
 */
export async function prepareLocalChain(ctx: ServiceContext, rpcUrl: string): Promise<{ state: LocalChainState; deployed: boolean }> {
  const provider = localProvider(rpcUrl);
  try {
    const genesis = await provider.getBlock(0);
    if (!genesis?.hash) throw new Error(`the local chain at ${rpcUrl} has no genesis block`);
    const existing = await getServiceState<LocalChainState>(ctx.db, LOCAL_CHAIN_STATE_KEY);
    if (existing && (await sameChain(provider, existing)) && (await tokensExist(provider, existing))) {
      const state = { ...existing, rpcUrl };
      await setServiceState(ctx.db, LOCAL_CHAIN_STATE_KEY, state);
      applyLocalChainState(ctx.registry, state, ctx.config.chainOverrides);
      return { state, deployed: false };
    }
    const [deployer] = await provider.send('eth_accounts', []);
    const tokens = await deployTestTokens(await provider.getSigner(deployer));
    const head = await provider.send('eth_getBlockByNumber', ['latest', false]);
    const stale = existing ? await pendingNotOnChain(ctx, provider) : [];
    const state: LocalChainState = {
      rpcUrl,
      genesisHash: genesis.hash,
      tokens,
      deployBlock: Number(head.number),
      deployBlockHash: head.hash,
      deployedAt: new Date().toISOString(),
    };
    await ctx.db.transaction(async (tx) => {
      await setServiceState(tx, LOCAL_CHAIN_STATE_KEY, state);
      if (existing) {
        // A new chain: what was pending on the old one can never confirm, unless its transaction is here.
        await dropTransfers(tx, ctx, stale);
      }
      await tx.delete(scannedBlocks).where(eq(scannedBlocks.chainId, LOCAL_CHAIN_ID));
      await resetCheckpoint(tx, LOCAL_CHAIN_ID, {
        number: Number(head.number),
        hash: head.hash,
        parentHash: head.parentHash,
        timestamp: Number(head.timestamp),
      });
    });
    applyLocalChainState(ctx.registry, state, ctx.config.chainOverrides);
    ctx.logger.info({ chainId: LOCAL_CHAIN_ID, tokens, genesisHash: genesis.hash, reset: !!existing }, 'test tokens deployed on the local chain');
    return { state, deployed: true };
  } finally {
    provider.destroy();
  }
}

/** The stored chain is this one: its deployment block (≥ 1) has the stored hash. */
async function sameChain(provider: JsonRpcProvider, state: LocalChainState): Promise<boolean> {
  if (!state.deployBlockHash) return true; // recorded before the hash was kept: the token check decides
  const block = await provider.send('eth_getBlockByNumber', [`0x${state.deployBlock.toString(16)}`, false]);
  return !!block && block.hash === state.deployBlockHash;
}

/** Pending local transfers whose transaction this chain does not have (read before any transaction). */
async function pendingNotOnChain(ctx: ServiceContext, provider: JsonRpcProvider): Promise<string[]> {
  const pending = await ctx.db
    .select({ id: transfers.id, txHash: transfers.txHash })
    .from(transfers)
    .where(and(eq(transfers.chainId, LOCAL_CHAIN_ID), inArray(transfers.status, ['pending'])));
  const gone: string[] = [];
  for (const t of pending) if (!(await provider.send('eth_getTransactionReceipt', [t.txHash]))) gone.push(t.id);
  return gone;
}

async function tokensExist(provider: JsonRpcProvider, state: LocalChainState): Promise<boolean> {
  for (const address of Object.values(state.tokens)) {
    if ((await provider.getCode(address)) === '0x') return false;
  }
  return true;
}

/**
 * Starts anvil for NETWORK=local with one-second blocks (confirmations accrue on their own) and
 * its state persisted under the data directory, then prepares it (tokens, state, registry).
 */
export async function startLocalChain(ctx: ServiceContext, port: number): Promise<{ anvil: RunningAnvil; state: LocalChainState; deployed: boolean }> {
  const stateFile = path.join(ctx.config.dataDir, 'anvil', 'state.json');
  const anvil = await startAnvil({ port, blockTime: 1, stateFile, stateIntervalSeconds: 5, onOutput: (line) => ctx.logger.trace({ anvil: line }) });
  try {
    const prepared = await prepareLocalChain(ctx, anvil.url);
    ctx.logger.info({ chainId: LOCAL_CHAIN_ID, rpcUrl: anvil.url, stateFile }, 'local chain running');
    return { anvil, ...prepared };
  } catch (err) {
    await anvil.stop();
    throw err;
  }
}
