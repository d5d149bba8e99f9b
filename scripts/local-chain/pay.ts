import { loadConfig } from '../../core/platform/config';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { loadLocalChainState } from '../../core/chains/evm/local-chain-state';
import { loadTronLocalState } from '../../core/chains/tron/tron-local-state';
import { loadSolanaLocalState } from '../../core/chains/solana/solana-local-state';
import { createDb } from '../../db/client';
import { payOnLocalChain, PayError, type PayDeps } from './payment';

/** `npm run pay -- <orderId|address> <amount> [currency] [--force]`: a test payment on a local chain (EVM, Tron or Solana by the address's form; an order on an EVM chain of the chains file pays there). */
async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const force = argv.includes('--force');
  const [target, amount, currency] = argv.filter((a) => a !== '--force');
  if (!target || !amount) {
    process.stderr.write('usage: npm run pay -- <orderId|0x…|T…|Solana address> <amount> [currency] [--force]\n');
    return 2;
  }
  const config = loadConfig({ ...process.env, NETWORK: 'local', LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' });
  // Not createService: a payment needs the database, the registry and the local chains' state,
  // not the job queue, migrations or the service's other start-up (issue 38: pay took 7-33 s).
  const dbHandle = createDb(config.databaseUrl, { max: 1 });
  const ctx: PayDeps = { config, db: dbHandle.db, registry: ChainRegistry.forConfig(config, SCANNED_FAMILIES) };
  try {
    await loadLocalChainState(ctx);
    await loadTronLocalState(ctx);
    await loadSolanaLocalState(ctx);
    const paid = await payOnLocalChain(ctx, target, amount, currency, { force });
    process.stdout.write(`Sent ${paid.amount} ${paid.currency} to ${paid.to}\n  tx ${paid.txHash} in block ${paid.blockNumber} (from ${paid.from})\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`pay failed: ${err instanceof PayError ? err.message : (err as Error).message}\n`);
    return 1;
  } finally {
    await dbHandle.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`pay failed: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
