import { loadConfig } from '../../core/platform/config';
import { createService } from '../../core/service/service';
import { payOnLocalChain, PayError } from './payment';

/** `npm run pay -- <orderId|address> <amount> [currency] [--force]`: a test payment on a local chain (EVM, Tron or Solana by the address's form). */
async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const force = argv.includes('--force');
  const [target, amount, currency] = argv.filter((a) => a !== '--force');
  if (!target || !amount) {
    process.stderr.write('usage: npm run pay -- <orderId|0x…|T…|Solana address> <amount> [USDT|USDC|DAI] [--force]\n');
    return 2;
  }
  const config = loadConfig({ ...process.env, NETWORK: 'local', LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' });
  const { ctx, dbHandle } = await createService(config, { migrate: false });
  try {
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
