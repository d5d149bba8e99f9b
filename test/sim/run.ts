import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ROOT } from '../helpers/processes';
import { formatReport } from './report';
import { FAULT_PRESETS, POOL_MODES, type FaultPreset, type FaultSettings, type PoolMode } from './scenario';
import { runSimulation } from './simulation';

/**
 * `npm run sim -- --payments N --seed S [--workers K] [--spread-seconds T] [--from-build]
 * [--faults none|realistic|heavy] [--rpc-fault-scale X] [--stalls N] [--workers-down N] [--kills N]
 * [--redis-restarts N] [--reorgs N] [--pool recycling|fresh]`: the money simulation against the
 * real service (API + K workers, Postgres, anvil, tron-local, solana-local, a private Redis).
 * Exits 1 when an invariant is violated or the service disagrees with what the chain says, 2 on a
 * bad argument. --from-build runs the API and workers from a fresh compiled build (the bundles the
 * image runs) instead of the TypeScript sources.
 *
 * The fault schedule (scenario.ts FaultSettings):
 * - `--faults heavy` (the default): the schedule the simulation has always run — RPC faults at
 *   DEFAULT_RPC_FAULTS' rates, scanner stalls of 1 s up to 120 s, every worker down for 3–20 s,
 *   worker kills, Redis restarts, reorgs on every chain; a seed gives the same scenario as before
 *   the presets existed.
 * - `--faults realistic`: RPC fault rates × 0.2, two stalls (EVM, then Tron) of 1–9 s, one worker
 *   kill, no every-worker-down period, no Redis restart, the same reorgs as heavy.
 * - `--faults none`: no fault at all (no RPC faults, stalls, kills, every-worker-down periods, Redis
 *   restarts or reorgs).
 * Overrides on top of the preset: `--rpc-fault-scale X` (multiplier of the proxy's default fault
 * rates, each capped at 1), `--stalls N` (durations as the preset's: heavy's range under heavy,
 * 1–9 s otherwise), `--workers-down N` (3–20 s each; realistic with `--workers-down 1` is a deploy
 * of the job tier), `--kills N`, `--redis-restarts N`, `--reorgs N`. Every preset draws the seed's
 * random numbers as heavy does and keeps the first N faults of each kind, so the orders, payments
 * and clocks of a seed are the same under every preset; faults beyond heavy's count come from a
 * stream of their own.
 * `--pool fresh` gives every organization its demand per family plus a margin in never-used
 * addresses (no address is ever recycled); `--pool recycling` (the default) is the usual sizing, in
 * which organizations with a cooldown of 0 get fewer addresses than orders, so addresses are reused.
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

/** parseArgs, with an unknown option or a missing value reported as a bad argument (exit 2), not a crash. */
function parseArgsOrExit<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgsOrExit({
    options: {
      payments: { type: 'string', default: '200' },
      seed: { type: 'string' },
      workers: { type: 'string', default: '2' },
      'spread-seconds': { type: 'string' },
      'out-dir': { type: 'string' },
      'self-test': { type: 'boolean', default: false },
      shrink: { type: 'boolean', default: false },
      'from-build': { type: 'boolean', default: false },
      faults: { type: 'string', default: 'heavy' },
      'rpc-fault-scale': { type: 'string' },
      stalls: { type: 'string' },
      'workers-down': { type: 'string' },
      kills: { type: 'string' },
      'redis-restarts': { type: 'string' },
      reorgs: { type: 'string' },
      pool: { type: 'string', default: 'recycling' },
    },
  } as const);
  const int = (name: string, v: string | undefined, min: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) {
      console.error(`--${name} must be an integer ≥ ${min} (got ${v})`);
      process.exit(2);
    }
    return n;
  };
  const oneOf = <T extends string>(name: string, v: string | undefined, allowed: readonly T[]): T => {
    if (!allowed.includes(v as T)) {
      console.error(`--${name} must be one of ${allowed.join(', ')} (got ${v})`);
      process.exit(2);
    }
    return v as T;
  };
  const count = (name: string, v: string | undefined) => (v === undefined ? undefined : int(name, v, 0));
  const rpcFaultScale = (() => {
    const v = values['rpc-fault-scale'];
    if (v === undefined) return undefined;
    const x = Number(v);
    if (v.trim() === '' || !Number.isFinite(x) || x < 0) {
      console.error(`--rpc-fault-scale must be a number ≥ 0 (got ${v})`);
      process.exit(2);
    }
    return x;
  })();
  const faults: FaultSettings = {
    preset: oneOf<FaultPreset>('faults', values.faults, FAULT_PRESETS),
    rpcFaultScale,
    stalls: count('stalls', values.stalls),
    workersDown: count('workers-down', values['workers-down']),
    kills: count('kills', values.kills),
    redisRestarts: count('redis-restarts', values['redis-restarts']),
    reorgs: count('reorgs', values.reorgs),
  };
  const pool = oneOf<PoolMode>('pool', values.pool, POOL_MODES);
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : int('seed', values.seed, 0);
  const build = values['from-build'] ? buildForSimulation() : null;
  process.on('exit', () => build?.remove());
  const base = {
    payments: int('payments', values.payments, 1),
    seed,
    workers: int('workers', values.workers, 1),
    spreadMs: values['spread-seconds'] === undefined ? undefined : int('spread-seconds', values['spread-seconds'], 5) * 1000,
    faults,
    pool,
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
