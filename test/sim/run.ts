import { parseArgs } from 'node:util';
import { formatReport } from './report';
import { runSimulation } from './simulation';

/**
 * `npm run sim -- --payments N --seed S [--workers K] [--spread-seconds T]`: the money simulation
 * against the real service (API + K workers, Postgres, anvil, a private Redis). Exits 1 when an
 * invariant is violated or the service disagrees with what the chain says.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      payments: { type: 'string', default: '200' },
      seed: { type: 'string' },
      workers: { type: 'string', default: '2' },
      'spread-seconds': { type: 'string' },
      'out-dir': { type: 'string' },
    },
  });
  const int = (name: string, v: string | undefined, min: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) {
      console.error(`--${name} must be an integer ≥ ${min} (got ${v})`);
      process.exit(2);
    }
    return n;
  };
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : int('seed', values.seed, 0);
  const report = await runSimulation({
    payments: int('payments', values.payments, 1),
    seed,
    workers: int('workers', values.workers, 1),
    spreadMs: values['spread-seconds'] === undefined ? undefined : int('spread-seconds', values['spread-seconds'], 5) * 1000,
    outDir: values['out-dir'],
    log: (l) => console.log(`[sim] ${l}`),
  });
  console.log(formatReport(report));
  process.exit(report.violations.length + report.mismatches.length > 0 ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
