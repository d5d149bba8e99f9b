import path from 'node:path';
import { and, eq, inArray } from 'drizzle-orm';
import { JsonRpcProvider, Network } from 'ethers';
import { scannedBlocks, transfers } from '../../../../db/schema';
import type { ServiceContext } from '../../../context';
import { getServiceState, setServiceState } from '../../../service-state';
import { dropTransfers } from '../../../transfers/record-transfer';
import { envKey, type ChainRegistry, type Currency } from '../../registry';
import { initCheckpoint } from '../evm-scanner';
import { startAnvil, type RunningAnvil } from './anvil';
import { deployTestTokens, TEST_TOKENS } from './test-tokens';

/**
 * The local chain (NETWORK=local): anvil with USDT/USDC/DAI test tokens deployed on first start.
 * Their addresses, the chain's genesis hash and its RPC URL live in service_state so that every
 * process (API, workers, `npm run pay`) loads them into its registry at start.
 */
export const LOCAL_CHAIN_ID = 'ethereum-local';
export const LOCAL_CHAIN_STATE_KEY = 'local_chain';

export interface LocalChainState {
  rpcUrl: string;
  genesisHash: string;
  tokens: Record<Currency, string>;
  deployBlock: number;
  deployedAt: string;
}

export function localProvider(rpcUrl: string): JsonRpcProvider {
  const network = Network.from(31337);
  return new JsonRpcProvider(rpcUrl, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1, pollingInterval: 200 });
}

/** Loads the local chain's tokens (and RPC URL, unless RPC_URLS_ETHEREUM_LOCAL is set) into a registry. */
export function applyLocalChainState(registry: ChainRegistry, state: LocalChainState, overrides: Record<string, string> = {}): void {
  if (!registry.get(LOCAL_CHAIN_ID)) return;
  for (const t of TEST_TOKENS) {
    if (!overrides[`TOKEN_${envKey(LOCAL_CHAIN_ID)}_${t.currency}`] && state.tokens[t.currency]) {
      registry.setTokenAddress(LOCAL_CHAIN_ID, t.currency, state.tokens[t.currency], t.decimals);
    }
  }
  if (!overrides[`RPC_URLS_${envKey(LOCAL_CHAIN_ID)}`]) registry.setRpcUrls(LOCAL_CHAIN_ID, [state.rpcUrl]);
}

/** Every process at start (NETWORK=local): what the local chain process stored. */
export async function loadLocalChainState(ctx: ServiceContext): Promise<LocalChainState | null> {
  const state = await getServiceState<LocalChainState>(ctx.db, LOCAL_CHAIN_STATE_KEY);
  if (state) applyLocalChainState(ctx.registry, state, ctx.config.chainOverrides);
  return state;
}

/**
 * Run by the process that starts anvil, once it listens: deploys the test tokens when the chain
 * is new (no state, or its genesis hash changed: the chain was reset), in which case the local
 * checkpoint restarts at the deployment block and pending transfers of the old chain are dropped.
 */
export async function prepareLocalChain(ctx: ServiceContext, rpcUrl: string): Promise<{ state: LocalChainState; deployed: boolean }> {
  const provider = localProvider(rpcUrl);
  try {
    const genesis = await provider.getBlock(0);
    if (!genesis?.hash) throw new Error(`the local chain at ${rpcUrl} has no genesis block`);
    const existing = await getServiceState<LocalChainState>(ctx.db, LOCAL_CHAIN_STATE_KEY);
    if (existing && existing.genesisHash === genesis.hash && (await tokensExist(provider, existing))) {
      const state = { ...existing, rpcUrl };
      await setServiceState(ctx.db, LOCAL_CHAIN_STATE_KEY, state);
      applyLocalChainState(ctx.registry, state, ctx.config.chainOverrides);
      return { state, deployed: false };
    }
    const [deployer] = await provider.send('eth_accounts', []);
    const tokens = await deployTestTokens(await provider.getSigner(deployer));
    const head = await provider.send('eth_getBlockByNumber', ['latest', false]);
    const state: LocalChainState = { rpcUrl, genesisHash: genesis.hash, tokens, deployBlock: Number(head.number), deployedAt: new Date().toISOString() };
    await ctx.db.transaction(async (tx) => {
      await setServiceState(tx, LOCAL_CHAIN_STATE_KEY, state);
      if (existing) {
        // A new chain: what was pending on the old one can never confirm.
        const stale = await tx
          .select({ id: transfers.id })
          .from(transfers)
          .where(and(eq(transfers.chainId, LOCAL_CHAIN_ID), inArray(transfers.status, ['pending'])));
        await dropTransfers(tx, ctx, stale.map((t) => t.id));
      }
      await tx.delete(scannedBlocks).where(eq(scannedBlocks.chainId, LOCAL_CHAIN_ID));
      await initCheckpoint(tx, LOCAL_CHAIN_ID, {
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
