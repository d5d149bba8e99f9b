import { getServiceState } from '../../platform/service-state';
import type { LocalStateDeps } from '../local-tooling';
import { CURRENCIES, envKey, type ChainRegistry, type Currency } from '../registry';

/**
 * The local chain's stored state (NETWORK=local). The development tooling under
 * scripts/local-chain/ runs anvil, deploys the test tokens and writes this record to service_state;
 * every process (API, workers, `npm run pay`) loads it into its registry at start. Core only reads
 * it: nothing here needs anvil or solc.
 */
export const LOCAL_CHAIN_ID = 'ethereum-local';
export const LOCAL_CHAIN_STATE_KEY = 'local_chain';

export interface LocalChainState {
  rpcUrl: string;
  genesisHash: string;
  tokens: Record<Currency, string>;
  deployBlock: number;
  /** Identifies the chain across anvil restarts (block 0's hash changes when anvil reloads a short chain). */
  deployBlockHash?: string;
  deployedAt: string;
}

/**
 * Loads the local chain's tokens (and RPC URL) into a registry, unless TOKEN_ETHEREUM_LOCAL_<CURRENCY>
 * or RPC_URLS_ETHEREUM_LOCAL override them. Decimals come from the registry's chain definition.
 */
export function applyLocalChainState(registry: ChainRegistry, state: LocalChainState, overrides: Record<string, string> = {}): void {
  if (!registry.get(LOCAL_CHAIN_ID)) return;
  for (const currency of CURRENCIES) {
    if (!overrides[`TOKEN_${envKey(LOCAL_CHAIN_ID)}_${currency}`] && state.tokens[currency]) {
      registry.setTokenAddress(LOCAL_CHAIN_ID, currency, state.tokens[currency]);
    }
  }
  if (!overrides[`RPC_URLS_${envKey(LOCAL_CHAIN_ID)}`]) registry.setRpcUrls(LOCAL_CHAIN_ID, [state.rpcUrl]);
  // anvil serves WebSocket on its HTTP port: new heads are pushed unless RPC_WS_URLS_… says otherwise.
  if (overrides[`RPC_WS_URLS_${envKey(LOCAL_CHAIN_ID)}`] === undefined) {
    registry.setWsUrls(LOCAL_CHAIN_ID, registry.get(LOCAL_CHAIN_ID)!.rpcUrls.filter((u) => /^https?:/.test(u)).map((u) => u.replace(/^http/, 'ws')));
  }
}

/** Every process at start (NETWORK=local): what the local chain process stored. */
export async function loadLocalChainState(ctx: LocalStateDeps): Promise<LocalChainState | null> {
  const state = await getServiceState<LocalChainState>(ctx.db, LOCAL_CHAIN_STATE_KEY);
  if (state) applyLocalChainState(ctx.registry, state, ctx.config.chainOverrides);
  return state;
}
