import type { AdapterDeps, ChainAdapter, ChainAdapterFactory } from './adapter-contract';
import { EvmAdapter } from './evm/evm-adapter';
import { SolanaAdapter } from './solana/solana-adapter';
import { TronAdapter } from './tron/tron-adapter';
import type { Chain, Protocol } from './chain';

/**
 * The protocol families that have a ChainAdapter (core/chains/adapter-contract.ts): the one list the
 * workers and the API learn families from. A family is added here and nowhere else.
 */
export const ADAPTER_FACTORIES: Partial<Record<Protocol, ChainAdapterFactory>> = {
  // One adapter (and RPC client, with its back-off state) per chain and process: the detection
  // core keeps it on the service context (core/detection/monitor.ts).
  evm: (chain, deps) => new EvmAdapter(chain, EvmAdapter.rpcFor(chain, deps)),
  tron: (chain, deps) => new TronAdapter(chain, TronAdapter.httpFor(chain, deps)),
  solana: (chain, deps) => new SolanaAdapter(chain, SolanaAdapter.clientFor(chain, deps)),
};

/** The families with a scanner, which the service offers (core/service/service.ts tells the registry). */
export const SCANNED_FAMILIES: readonly Protocol[] = Object.keys(ADAPTER_FACTORIES) as Protocol[];

/** The adapter of a chain, or null when its family has none. */
export function createChainAdapter(chain: Chain, deps: AdapterDeps): ChainAdapter | null {
  return ADAPTER_FACTORIES[chain.protocol]?.(chain, deps) ?? null;
}
