import { loadConfig } from '../../core/platform/config';
import { handleShutdown, runMain } from '../../core/platform/process';
import { createService } from '../../core/service/service';
import { startLocalChain } from './local-chain';
import { startTronLocal } from './tron/tron-local';
import { startSolanaLocalChain } from './solana/solana-local-chain';

/**
 * `npm run chain`: the local chains alone (anvil + test tokens, tron-local and solana-local), for when the API and workers run as
 * separate processes. They read its URL and token addresses from the database at start
 * (RPC_URLS_ETHEREUM_LOCAL overrides the URL).
 */
runMain(async () => {
  const config = loadConfig({ ...process.env, NETWORK: 'local' });
  const { ctx, dbHandle } = await createService(config);
  const { anvil, state, deployed } = await startLocalChain(ctx, config.localChainPort ?? 8545);
  const tron = await startTronLocal(ctx, config.tronLocal.port ?? 8090);
  const solana = await startSolanaLocalChain(ctx, config.solanaLocal.port ?? 8899);
  process.stdout.write(
    `\n  Local chain ethereum-local (chain id 31337) on ${anvil.url}${deployed ? ' — test tokens deployed' : ''}\n` +
      (['USDT', 'USDC', 'DAI'] as const).map((c) => `    ${c.padEnd(4)} ${state.tokens[c]}\n`).join('') +
      `  Local chain tron-local on ${tron.node.url} (block ${config.tronLocal.blockTimeMs} ms, solidified ${config.tronLocal.solidificationLag} blocks behind)\n    USDT ${tron.state.token}\n` +
      `  Local chain solana-local on ${solana.chain.url} (slot ${config.solanaLocal.slotMs} ms, finalized ${config.solanaLocal.finalizationLag} blocks behind)\n    USDC ${solana.state.mints.USDC}\n    USDT ${solana.state.mints.USDT}\n` +
      `  Start the API and workers now (npm run start:api / npm run start:worker); Ctrl-C stops the chain (state kept in ${config.dataDir}).\n\n`,
  );
  handleShutdown(async () => {
    await anvil.stop();
    await tron.node.stop();
    await solana.chain.stop();
    await dbHandle.close();
  }, ctx.logger);
});
