import { loadConfig } from '../../../core/platform/config';
import { createLogger } from '../../../core/platform/logger';
import { handleShutdown, runMain } from '../../../core/platform/process';
import { startSolanaLocal } from './solana-local';

/**
 * solana-local alone, until `npm start` and `npm run chain` start it with the other local chains:
 * `npx tsx scripts/local-chain/solana/main.ts [--port 8899] [--slot-ms 400]`. State under
 * DATA_DIR/solana-local; Ctrl-C keeps it.
 */
runMain(async () => {
  const config = loadConfig({ ...process.env, NETWORK: 'local' });
  const logger = createLogger(config.logLevel);
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(name);
    const value = i === -1 ? fallback : Number(process.argv[i + 1]);
    if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
    return value;
  };
  const chain = await startSolanaLocal({ dataDir: config.dataDir, port: arg('--port', 8899), slotMs: arg('--slot-ms', 400) });
  const { mints, payer } = chain.info;
  process.stdout.write(
    `\n  solana-local on ${chain.url} (slot ${chain.node.slotMs} ms, confirmed ${chain.node.confirmationLag} and finalized ${chain.node.finalizationLag} blocks behind)${chain.created ? ' — new chain, test mints created' : ''}\n` +
      `    USDC ${mints.USDC}\n    USDT ${mints.USDT}\n    payer ${payer}\n  State in ${config.dataDir}/solana-local; Ctrl-C stops it.\n\n`,
  );
  handleShutdown(() => chain.stop(), logger);
});
