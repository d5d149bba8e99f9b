import { JsonRpcProvider, Network } from 'ethers';

/**
 * An ethers provider for anvil (chain id 31337), apart from local-chain.ts so `npm run pay` loads
 * ethers without the detection core that preparing the chain needs.
 */
export function localProvider(rpcUrl: string): JsonRpcProvider {
  const network = Network.from(31337);
  return new JsonRpcProvider(rpcUrl, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1, pollingInterval: 200 });
}
