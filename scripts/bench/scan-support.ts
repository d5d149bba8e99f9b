import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import type { ServiceContext } from '../../core/service/context';
import type { ChainRegistry, Protocol } from '../../core/chains/registry';
import type { Config } from '../../core/platform/config';
import { systemClock } from '../../core/platform/clock';
import { createLogger } from '../../core/platform/logger';
import { lazyJobQueue } from '../../core/jobs/bullmq-job-queue';
import { DetectionState } from '../../core/service/detection-state';
import { newProcessMemory } from '../../core/service/process-memory';
import type { Database } from '../../db/client';
import type { ChainAdapter } from '../../core/chains/adapter-contract';
import { createWorkerRedis, deleteKeysWithPrefix } from '../../core/platform/redis';
import { events, poolAddresses } from '../../db/schema';
import { percentile, runBench } from './bench-kit';

/** What the scan benchmarks of every chain family share: their own store, pool filling, latency figures. */

const FAMILIES = ['evm', 'tron', 'solana'] as const;

/**
 * Runs one family's part of `bench:scan` unless BENCH_FAMILIES (a comma list of evm, tron, solana;
 * unset = all) leaves it out, so a family's catch-up at scale can be measured alone.
 */
export function runScanBench(family: (typeof FAMILIES)[number], main: () => Promise<void>): void {
  const listed = (process.env.BENCH_FAMILIES ?? FAMILIES.join(','))
    .split(',')
    .map((f) => f.trim().toLowerCase())
    .filter(Boolean);
  const unknown = listed.filter((f) => !(FAMILIES as readonly string[]).includes(f));
  if (unknown.length > 0) {
    console.error(`BENCH_FAMILIES: unknown ${unknown.join(', ')} (known: ${FAMILIES.join(', ')})`);
    process.exit(1);
  }
  if (!listed.includes(family)) {
    process.stdout.write(`(${family} part skipped: BENCH_FAMILIES=${process.env.BENCH_FAMILIES})\n`);
    return;
  }
  runBench(main);
}

export const ms = (n: number) => `${n.toFixed(0)} ms`;
export const sleep = (msec: number) => new Promise((r) => setTimeout(r, msec));

/** A database and Redis prefix of the benchmark's own, and how to remove both. */
export function benchStore(label: string) {
  const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  const dbName = `sg_bench_${label}_${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const url = new URL(base);
  url.pathname = `/${dbName}`;
  return {
    dbUrl: url.toString(),
    redisPrefix: `sgbench${randomBytes(3).toString('hex')}`,
    async drop(redisUrl: string, redisPrefix: string): Promise<void> {
      const redis = createWorkerRedis(redisUrl);
      await deleteKeysWithPrefix(redis, redisPrefix).catch(() => {});
      redis.disconnect();
      const admin = postgres(base.toString(), { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
      await admin.end();
    },
  };
}

/** A scan benchmark's service context: its database and registry, the system clock, warnings only. */
export function benchContext(config: Config, db: Database, registry: ChainRegistry): ServiceContext {
  // The scanner enqueues nothing; a lazy job queue never opens its connection.
  return { config, db, registry, clock: systemClock, logger: createLogger('warn'), jobs: lazyJobQueue(config.redisUrl, config.redisPrefix), detection: new DetectionState(), memory: newProcessMemory(config) };
}

export async function insertPool(ctx: ServiceContext, organizationId: string, protocol: Protocol, addresses: string[]): Promise<void> {
  const now = Date.now();
  for (let i = 0; i < addresses.length; i += 5000) {
    await ctx.db.insert(poolAddresses).values(
      addresses.slice(i, i + 5000).map((address, j) => ({
        organizationId,
        protocol,
        address,
        mode: 'self_managed' as const,
        status: 'available' as const,
        createdAt: new Date(now + i + j),
      })),
    );
  }
}

/** Milliseconds from `since` to the order's order.completed row (polled; 30 s at most). */
export async function completionLatency(ctx: ServiceContext, orderId: string, since: number): Promise<number> {
  while (Date.now() < since + 30_000) {
    const [row] = await ctx.db
      .select({ createdAt: events.createdAt })
      .from(events)
      .where(sql`${events.type} = 'order.completed' and ${events.data}->>'orderId' = ${orderId}`);
    if (row) return row.createdAt.getTime() - since;
    await sleep(20);
  }
  throw new Error(`order ${orderId} did not complete within 30 s`);
}

export function reportLatencies(latencies: number[], pollMs: number): string {
  const sorted = [...latencies].sort((a, b) => a - b);
  const pct = (p: number) => percentile(sorted, p);
  const p50 = pct(50);
  return `  ${sorted.length} orders: p50 ${ms(p50)}, p90 ${ms(pct(90))}, max ${ms(sorted[sorted.length - 1])}; p50 beyond the ${pollMs} ms poll interval: ${ms(Math.max(0, p50 - pollMs))}  (target < 1 s)\n`;
}

/** Time and calls spent in each adapter method (the RPC side of a scan), the rest being the core's and the database's. */
export interface AdapterTimes {
  byMethod: Map<string, { count: number; ms: number; calls: number }>;
}

/**
 * The adapter with each method timed (wall time: methods run one after another within a scan).
 * What a catch-up figure is made of: time in transfersInRange and in the block look-ups, and what
 * is left for the core's range logic and the database.
 */
export function timedAdapter<A extends ChainAdapter>(adapter: A): { adapter: A; times: AdapterTimes } {
  const times: AdapterTimes = { byMethod: new Map() };
  const proxy = new Proxy(adapter, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'constructor' || typeof prop !== 'string') return value;
      return async (...args: unknown[]) => {
        const started = performance.now();
        const callsBefore = target.calls;
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          const t = times.byMethod.get(prop) ?? { count: 0, ms: 0, calls: 0 };
          t.count++;
          t.ms += performance.now() - started;
          t.calls += target.calls - callsBefore;
          times.byMethod.set(prop, t);
        }
      };
    },
  });
  return { adapter: proxy, times };
}

/** Lines of where a catch-up's time went: per adapter method (calls, ms, ms per call), then the rest. */
export function reportTimes(times: AdapterTimes, elapsedMs: number): string {
  let inAdapter = 0;
  const lines = [...times.byMethod].map(([method, t]) => {
    inAdapter += t.ms;
    const perCall = t.calls > 0 ? ` = ${(t.ms / t.calls).toFixed(2)} ms per RPC call` : '';
    return `    ${method.padEnd(18)} ${String(t.count).padStart(6)}×  ${String(t.calls).padStart(7)} RPC calls  ${ms(t.ms).padStart(9)}${perCall}\n`;
  });
  return lines.join('') + `    ${'core and database'.padEnd(18)} ${ms(elapsedMs - inAdapter).padStart(36)}\n`;
}
