import { StartupError } from '../platform/startup-errors';
import { ProviderUnavailableError, type AdapterDeps } from './adapter-contract';
import { createChainAdapter } from './adapters';
import type { ChainRegistry } from './registry';

/**
 * The start-up check of the chains file's tokens: each one's decimals() read from its chain before
 * the process serves anything. A token whose chain says other decimals than the file stops the
 * start, naming the file's line (one wrong figure misstates every amount by a power of ten). A
 * chain that cannot be reached now is left to the scanner, which checks every token before it
 * scans (core/detection/monitor.ts) and refuses a mismatch the same way, chain by chain.
 */
export async function verifyChainsFileTokens(registry: ChainRegistry, deps: AdapterDeps): Promise<void> {
  const file = registry.chainsFile;
  if (!file) return;
  const problems: string[] = [];
  for (const chain of registry.list().filter((c) => c.enabled)) {
    for (const token of Object.values(chain.tokens)) {
      const line = token?.address ? file.lines[`${chain.chainId}|${token.currency}`] : undefined;
      if (!token || line === undefined) continue;
      // One token per adapter: its verdict's problem is this token's.
      const adapter = createChainAdapter({ ...chain, tokens: { [token.currency]: token } }, deps);
      if (!adapter) continue;
      try {
        const verdict = await adapter.verifyTokens();
        for (const problem of verdict.problems) problems.push(`CHAINS_FILE ${file.path} line ${line}: ${chain.chainId} ${problem}`);
      } catch (err) {
        if (!(err instanceof ProviderUnavailableError)) throw err;
        deps.logger.warn({ chainId: chain.chainId, currency: token.currency }, `could not check the decimals of ${token.currency} on ${chain.chainId} at start-up (${err.message}); the scanner checks them before it scans`);
      }
    }
  }
  if (problems.length > 0) throw new StartupError(`Token decimals differ from the chains file:\n  - ${problems.join('\n  - ')}`);
}
