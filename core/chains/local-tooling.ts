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
    super(
      missing === COMPILED_BUILD
        ? 'NETWORK=local does not run from the compiled build: dist/ leaves the local chain\'s tooling out on purpose (production runs a real network). For a local chain run `npm start` from the checkout; to run dist/, set NETWORK=testnet or NETWORK=mainnet'
        : `NETWORK=local needs the development tooling (${missing} is missing in this installation): set NETWORK=testnet or NETWORK=mainnet, or run from a full checkout after npm install`,
    );
    this.name = 'LocalToolingMissingError';
  }
}

/** Where the tooling lives, relative to this file (core/chains/ → the repository root). */
export const LOCAL_CHAIN_TOOLING_DIR = path.resolve(__dirname, '../../scripts/local-chain');

/**
 * What `missingLocalChainTooling` answers in the compiled build (`npm run build`): its bundles keep
 * the tooling a run-time require they cannot satisfy (scripts/build.mjs), whatever the checkout
 * beside them holds, so "scripts/local-chain/ is missing" would send the operator looking for a
 * folder that is there.
 */
const COMPILED_BUILD = 'the compiled build';

/** Whether this code runs from the bundles of dist/ (JavaScript) rather than the TypeScript sources. */
const RUNS_COMPILED = path.extname(__filename) === '.js';

/** What of the local chain's tooling is missing, or null when all of it is there. */
export function missingLocalChainTooling(toolingDir = LOCAL_CHAIN_TOOLING_DIR, compiled = RUNS_COMPILED): string | null {
  if (compiled) return COMPILED_BUILD;
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
