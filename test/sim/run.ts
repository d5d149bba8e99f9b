import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../helpers/processes';
import { formatReport } from './report';
import { runSimulation } from './simulation';

/**
 * `npm run sim -- --payments N --seed S [--workers K] [--spread-seconds T] [--from-build]`: the
 * money simulation against the real service (API + K workers, Postgres, anvil, a private Redis).
 * Exits 1 when an invariant is violated or the service disagrees with what the chain says.
 * --from-build runs the API and workers from a fresh compiled build (the bundles the image runs)
 * instead of the TypeScript sources.
 */

/**
 * A compiled build inside the checkout (node_modules resolve from the root, as for dist/), with the
 * local chains' tooling linked in: the build leaves it out and refuses NETWORK=local without it.
 */
function buildForSimulation(): { dir: string; remove(): void } {
  const dir = path.join(ROOT, `.sim-build-${process.pid}-${randomBytes(3).toString('hex')}`);
  execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), dir], { cwd: ROOT, stdio: 'inherit' });
  symlinkSync(path.join(ROOT, 'scripts/local-chain'), path.join(dir, 'scripts/local-chain'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      payments: { type: 'string', default: '200' },
      seed: { type: 'string' },
      workers: { type: 'string', default: '2' },
      'spread-seconds': { type: 'string' },
      'out-dir': { type: 'string' },
      'self-test': { type: 'boolean', default: false },
      shrink: { type: 'boolean', default: false },
      'from-build': { type: 'boolean', default: false },
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
  const build = values['from-build'] ? buildForSimulation() : null;
  process.on('exit', () => build?.remove());
  const base = {
    payments: int('payments', values.payments, 1),
    seed,
    workers: int('workers', values.workers, 1),
    spreadMs: values['spread-seconds'] === undefined ? undefined : int('spread-seconds', values['spread-seconds'], 5) * 1000,
    outDir: values['out-dir'],
    buildDir: build?.dir,
    log: (l: string) => console.log(`[sim] ${l}`),
    // The self-test injects a deliberate bug into the service's database (simulation.ts injectFault).
    fault: values['self-test'] ? ('count-dropped' as const) : undefined,
  };
  const report = await runSimulation(base);
  console.log(formatReport(report));
  const failed = report.violations.length + report.mismatches.length > 0;
  if (values['self-test']) {
    console.log(failed ? 'self-test passed: the simulation caught the injected fault (count-dropped)' : 'SELF-TEST FAILED: the injected fault went unnoticed');
    process.exit(failed ? 0 : 1);
  }
  if (failed && values.shrink) {
    // Shrinking: the same scenario with fewer operations, while it still fails.
    let smallest: { fraction: number; tracePath: string | null } = { fraction: 1, tracePath: report.tracePath };
    for (let fraction = 0.5; fraction >= 1 / 16; fraction /= 2) {
      console.log(`[sim] shrinking: keeping 1/${Math.round(1 / fraction)} of the operations`);
      const r = await runSimulation({ ...base, keepFraction: fraction });
      if (r.violations.length + r.mismatches.length === 0) break;
      smallest = { fraction, tracePath: r.tracePath };
      console.log(formatReport(r));
    }
    console.log(`smallest failing run: seed ${seed} keeping 1/${Math.round(1 / smallest.fraction)} of the operations; trace ${smallest.tracePath}`);
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
