import fs from 'node:fs';
import path from 'node:path';
import type { getServiceState } from '../platform/service-state';
import { StartupError } from '../platform/startup-errors';
import type { ChainRegistry } from './registry';

/**
 * NETWORK=local runs on development tooling that production installs leave out: the local chain's
 * runner, test tokens and `pay` under scripts/local-chain/ (not copied into the Docker image) and
 * anvil, a dev dependency (`npm ci --omit=dev` skips it). A process without them refuses
 * NETWORK=local at start with one line instead of failing later on a missing module.
 */
export class LocalToolingMissingError extends StartupError {
  constructor(missing: string) {
    super(`NETWORK=local needs the development tooling (${missing} is missing in this installation): set NETWORK=testnet or NETWORK=mainnet, or run from a full checkout after npm install`);
    this.name = 'LocalToolingMissingError';
  }
}

/** Where the tooling lives, relative to this file (core/chains/ → the repository root). */
export const LOCAL_CHAIN_TOOLING_DIR = path.resolve(__dirname, '../../scripts/local-chain');

/** What of the local chain's tooling is missing, or null when all of it is there. */
export function missingLocalChainTooling(toolingDir = LOCAL_CHAIN_TOOLING_DIR): string | null {
  if (!fs.existsSync(path.join(toolingDir, 'local-chain.ts'))) return 'scripts/local-chain/';
  try {
    require.resolve('@foundry-rs/anvil/package.json');
  } catch {
    return 'the dev dependency @foundry-rs/anvil';
  }
  return null;
}

export function assertLocalChainTooling(toolingDir?: string): void {
  const missing = missingLocalChainTooling(toolingDir);
  if (missing) throw new LocalToolingMissingError(missing);
}

/** What a local chain's state loader reads from (the service context, at start). */
export interface LocalStateDeps {
  db: Parameters<typeof getServiceState>[0];
  registry: ChainRegistry;
  config: { chainOverrides: Record<string, string> };
}
