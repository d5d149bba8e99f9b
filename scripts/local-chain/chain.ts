import { loadConfig } from '../../core/config';
import { handleShutdown, runMain } from '../../core/process';
import { createService } from '../../core/service';
import { startLocalChain } from './local-chain';

/**
 * `npm run chain`: the local chain alone (anvil + test tokens), for when the API and workers run as
 * separate processes. They read its URL and token addresses from the database at start
 * (RPC_URLS_ETHEREUM_LOCAL overrides the URL).
 */
runMain(async () => {
  const config = loadConfig({ ...process.env, NETWORK: 'local' });
  const { ctx, dbHandle } = await createService(config);
  const { anvil, state, deployed } = await startLocalChain(ctx, config.localChainPort ?? 8545);
  process.stdout.write(
    `\n  Local chain ethereum-local (chain id 31337) on ${anvil.url}${deployed ? ' — test tokens deployed' : ''}\n` +
      (['USDT', 'USDC', 'DAI'] as const).map((c) => `    ${c.padEnd(4)} ${state.tokens[c]}\n`).join('') +
      `  Start the API and workers now (npm run start:api / npm run start:worker); Ctrl-C stops the chain (state kept in ${config.dataDir}).\n\n`,
  );
  handleShutdown(async () => {
    await anvil.stop();
    await dbHandle.close();
  }, ctx.logger);
});
