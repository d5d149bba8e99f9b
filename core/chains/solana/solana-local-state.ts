import { getServiceState } from '../../platform/service-state';
import type { LocalStateDeps } from '../local-tooling';
import { envKey, type ChainRegistry } from '../registry';

/**
 * solana-local's stored state (NETWORK=local). The development tooling (scripts/local-chain/solana/)
 * runs the node and writes this record to service_state; every process (API, workers, `npm run
 * pay`) loads it into its registry at start, as for ethereum-local and tron-local.
 */
export const SOLANA_LOCAL_CHAIN_ID = 'solana-local';
export const SOLANA_LOCAL_STATE_KEY = 'solana_local_chain';

export interface SolanaLocalState {
  rpcUrl: string;
  genesisHash: string;
  /** The test mints (6 decimals). */
  mints: { USDC: string; USDT: string };
  /** Blocks between the node's newest block and its confirmed / finalized ones. */
  confirmationLag: number;
  finalizationLag: number;
  startedAt: string;
}

/**
 * Loads solana-local's mints and URL into a registry, unless TOKEN_SOLANA_LOCAL_<CURRENCY> /
 * RPC_URLS_SOLANA_LOCAL override them, and its finalization depth: the confirmations (counted
 * from the confirmed head) a block has when it is finalized, so a payment is confirmed when its
 * slot is finalized, whatever lags the node runs with.
 */
export function applySolanaLocalState(registry: ChainRegistry, state: SolanaLocalState, overrides: Record<string, string> = {}): void {
  if (!registry.get(SOLANA_LOCAL_CHAIN_ID)) return;
  const env = envKey(SOLANA_LOCAL_CHAIN_ID);
  for (const currency of ['USDC', 'USDT'] as const) {
    if (!overrides[`TOKEN_${env}_${currency}`]) registry.setTokenAddress(SOLANA_LOCAL_CHAIN_ID, currency, state.mints[currency], 6);
  }
  if (!overrides[`RPC_URLS_${env}`]) registry.setRpcUrls(SOLANA_LOCAL_CHAIN_ID, [state.rpcUrl]);
  registry.setSolidificationDepth(SOLANA_LOCAL_CHAIN_ID, solanaFinalizationDepth(state));
}

/** Confirmations of a block at the finalized slot, counted from the confirmed head (no skipped slot between). */
export function solanaFinalizationDepth(lags: { confirmationLag: number; finalizationLag: number }): number {
  return Math.max(1, lags.finalizationLag - lags.confirmationLag + 1);
}

export async function loadSolanaLocalState(ctx: LocalStateDeps): Promise<SolanaLocalState | null> {
  const state = await getServiceState<SolanaLocalState>(ctx.db, SOLANA_LOCAL_STATE_KEY);
  if (state) applySolanaLocalState(ctx.registry, state, ctx.config.chainOverrides);
  return state;
}
