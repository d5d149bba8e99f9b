/**
 * What the HTTP benchmarks share: autocannon's result type, a database and Redis prefix of the
 * run's own (removed at the end), and one printed line per measured run.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { getAddress, hexlify } from 'ethers';
import { deleteKeysWithPrefix } from '../../core/platform/redis';
import { loadConfig, type Config } from '../../core/platform/config';

interface Histogram {
  average: number;
  p50: number;
  p99: number;
}
export interface AutocannonResult {
  requests: Histogram & { total: number };
  latency: Histogram;
  non2xx: number;
  errors: number;
  timeouts: number;
  '2xx': number;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const autocannon = require('autocannon') as Autocannon;

export interface LoadGenerator {
  /** The child process's id (its CPU time is read from /proc). */
  pid: number;
  /** One autocannon run with these options (setupRequest by file path); runs go one at a time. */
  run(options: Record<string, unknown>): Promise<AutocannonResult>;
  close(): void;
}

/**
 * autocannon in a child process of its own (load-generator.cjs), on the same machine's cores as
 * the service, alive for the whole bench: the warm-up run warms the load generator that measures.
 */
export function startLoadGenerator(): LoadGenerator {
  const child = fork(path.join(__dirname, 'load-generator.cjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let nextId = 0;
  const waiting = new Map<number, { resolve: (r: AutocannonResult) => void; reject: (e: Error) => void }>();
  child.on('message', (m: { id: number; result?: AutocannonResult; error?: string }) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error) w?.reject(new Error(m.error));
    else w?.resolve(m.result!);
  });
  child.on('exit', (code) => {
    for (const w of waiting.values()) w.reject(new Error(`load generator exited (${code})`));
    waiting.clear();
  });
  return {
    pid: child.pid!,
    run: (options) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        waiting.set(id, { resolve, reject });
        child.send({ id, options });
      }),
    close: () => child.disconnect(),
  };
}

export function resultLine(name: string, r: AutocannonResult, width = 30): string {
  return `${name.padEnd(width)} ${r.requests.average.toFixed(0).padStart(7)} req/s   p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(r.latency.p99).padStart(4)} ms   2xx ${r['2xx']}  non-2xx ${r.non2xx}  errors ${r.errors}`;
}

export interface BenchState {
  dbUrl: string;
  redisUrl: string;
  prefix: string;
  /** Drops the run's database and deletes its Redis keys. */
  remove(): Promise<void>;
}

/** A database name and Redis prefix for this run (BENCH_DATABASE_URL / BENCH_REDIS_URL pick the servers). */
export function benchState(kind: string): BenchState {
  const baseDbUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const run = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const dbName = `sg_bench_${kind}_${run}`;
  const u = new URL(baseDbUrl);
  u.pathname = `/${dbName}`;
  const prefix = `sgb_${run}`;
  return {
    dbUrl: u.toString(),
    redisUrl,
    prefix,
    async remove() {
      const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      await deleteKeysWithPrefix(redis, prefix).catch(() => {});
      redis.disconnect();
      const admin = postgres(baseDbUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
      await admin.end();
    },
  };
}

/**
 * The configuration of a benchmark that runs the service in its own process on the run's database
 * and Redis prefix: NETWORK=local, silent, a free port, a random local USDT contract, the
 * caller's DATABASE_POOL_SIZE; `extra` adds or overrides variables (raised budgets, a trusted proxy).
 */
export function localBenchConfig(state: BenchState, extra: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: state.dbUrl,
    REDIS_URL: state.redisUrl,
    REDIS_PREFIX: state.prefix,
    NETWORK: 'local',
    LOG_LEVEL: 'silent',
    PORT: '0',
    TOKEN_ETHEREUM_LOCAL_USDT: getAddress(hexlify(randomBytes(20))),
    ...(process.env.DATABASE_POOL_SIZE ? { DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE } : {}),
    ...extra,
  });
}

/**
 * A V8 CPU profile of this process's main thread (BENCH_CPU_PROFILE): `start` once the measured
 * work begins (later calls do nothing), `save` writes the .cpuprofile. V8 cannot pause a profile.
 */
export async function cpuProfiler(): Promise<{ start(): Promise<void>; save(path: string): Promise<void> }> {
  const session = new Session();
  session.connect();
  const post = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));
  await post('Profiler.enable');
  let started = false;
  return {
    async start() {
      if (!started) await post('Profiler.start');
      started = true;
    },
    async save(path: string) {
      const { profile } = (await post('Profiler.stop')) as { profile: unknown };
      writeFileSync(path, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/** The p-th percentile (nearest rank) of ascending numbers: the one definition every benchmark prints. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Runs a benchmark's main and exits: 0 when it finished, 1 with the error printed otherwise. */
export function runBench(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
