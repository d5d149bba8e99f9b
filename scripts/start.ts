import { loadConfig } from '../core/config';
import { countOrganizations, createOrganization } from '../core/organizations';
import { handleShutdown, runMain } from '../core/process';
import { createService } from '../core/service';
import { startApi } from '../api/server';
import { startWorkerProcess } from '../workers/runtime';

/** Required on use, so that this file also runs where scripts/local-chain/ is left out (the image). */
function localChainTooling(): typeof import('./local-chain/local-chain') & typeof import('./local-chain/dev-pool') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return { ...require('./local-chain/local-chain'), ...require('./local-chain/dev-pool') };
}

/** `npm start`: API and workers in one process, on local defaults. */
runMain(async () => {
  const config = loadConfig();
  const { ctx, dbHandle } = await createService(config);

  // NETWORK=local: the local chain runs inside this process (`npm run chain` runs it alone). Its
  // tooling is development-only (scripts/local-chain/, not in the image): loaded only when used.
  const localChain =
    config.network === 'local' && config.startLocalChain
      ? await localChainTooling().startLocalChain(ctx, config.localChainPort ?? 0)
      : null;
  if (localChain) process.stdout.write(`\n  Local chain ethereum-local on ${localChain.anvil.url} (tokens: ${(['USDT', 'USDC', 'DAI'] as const).map((c) => `${c} ${localChain.state.tokens[c]}`).join(', ')})\n`);

  // First start on an empty database: a local organization, so a newcomer can call the API at once.
  if ((await countOrganizations(ctx.db)) === 0) {
    const { organizationId, ownerKey } = await createOrganization(ctx.db, 'Local organization');
    // The one exception to "no secret in output": printed once, on the terminal, never logged.
    process.stdout.write(
      `\n  Created organization ${organizationId}\n  Owner API key (shown once, store it now): ${ownerKey.key}\n` +
        `  Try: curl -H "X-API-Key: ${ownerKey.key}" http://localhost:${config.port}/api/v1/organizations\n\n`,
    );
    if (config.network === 'local') {
      const { added } = await localChainTooling().seedLocalDevPool(ctx.db, organizationId);
      process.stdout.write(`  Added ${added} watch-only development EVM addresses to its pool: pay orders with npm run pay -- <orderId> <amount>\n\n`);
    }
  }

  const workers = await startWorkerProcess(ctx);
  const api = await startApi(ctx);
  handleShutdown(async () => {
    await api.close();
    await workers.close();
    await localChain?.anvil.stop();
    await dbHandle.close();
  }, ctx.logger);
});
