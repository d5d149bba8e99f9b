import { getServiceState } from '../../platform/service-state';
import type { LocalStateDeps } from '../local-tooling';
import { envKey, type ChainRegistry } from '../registry';

/**
 * tron-local's stored state (NETWORK=local). The development tooling (scripts/local-chain/tron/)
 * runs the node and writes this record to service_state; every process (API, workers,
 * `npm run pay`) loads it into its registry at start, as for ethereum-local.
 */
export const TRON_LOCAL_CHAIN_ID = 'tron-local';
export const TRON_LOCAL_STATE_KEY = 'tron_local_chain';

export interface TronLocalState {
  rpcUrl: string;
  genesisHash: string;
  /** The test USDT contract, T… form. */
  token: string;
  startedAt: string;
  /** Blocks between the node's head and its solidified block (TRON_LOCAL_SOLIDIFICATION_LAG); absent in older records: 2. */
  solidificationLag?: number;
}

/**
 * Loads tron-local's token and URL into a registry, unless TOKEN_TRON_LOCAL_USDT / RPC_URLS_TRON_LOCAL
 * override them, and its solidification depth (lag + 1): a payment is confirmed when its block is
 * solidified, whatever lag the node runs with.
 */
export function applyTronLocalState(registry: ChainRegistry, state: TronLocalState, overrides: Record<string, string> = {}): void {
  if (!registry.get(TRON_LOCAL_CHAIN_ID)) return;
  const env = envKey(TRON_LOCAL_CHAIN_ID);
  if (!overrides[`TOKEN_${env}_USDT`]) registry.setTokenAddress(TRON_LOCAL_CHAIN_ID, 'USDT', state.token, 6);
  if (!overrides[`RPC_URLS_${env}`]) registry.setRpcUrls(TRON_LOCAL_CHAIN_ID, [state.rpcUrl]);
  if (state.solidificationLag !== undefined) registry.setSolidificationDepth(TRON_LOCAL_CHAIN_ID, state.solidificationLag + 1);
}

export async function loadTronLocalState(ctx: LocalStateDeps): Promise<TronLocalState | null> {
  const state = await getServiceState<TronLocalState>(ctx.db, TRON_LOCAL_STATE_KEY);
  if (state) applyTronLocalState(ctx.registry, state, ctx.config.chainOverrides);
  return state;
}
