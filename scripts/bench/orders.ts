/**
 * Benchmark of POST /orders against a bare Express + one INSERT baseline, on the real Postgres and
 * Redis of this machine, in a database and Redis prefix of its own (removed at the end).
 *
 *   npm run bench:orders                 # defaults: 10 connections, 3 rounds of 5 s per run
 *   BENCH_CONNECTIONS=20 BENCH_DURATION=8 BENCH_ROUNDS=5 npm run bench:orders
 *   BENCH_ROUNDS=1 BENCH_CPU_PROFILE=/tmp/orders.cpuprofile npm run bench:orders
 *   DATABASE_POOL_SIZE=10 npm run bench:orders   # the API's database pool (default: an API process's)
 *
 * The baseline keeps 10 database connections whatever the service's pool: its best of those tried
 * (4 and 10). The runs alternate (baseline, orders, baseline, orders, …) so that a busy moment of the machine
 * does not fall on one side only; each side's figures are those of its median round. Prints
 * throughput and p50/p99 latency of both and the ratio orders/baseline (target ≥ 0.7 with p99 < 20 ms, issue 20).
 *
 * A second baseline, for reference, inserts the same order row into the real `orders` table (its
 * four indexes, no allocation, no auth): how much of the gap is the data written rather than the
 * service's layers.
 */
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import express from 'express';
import postgres from 'postgres';
import { getAddress, hexlify } from 'ethers';
import { Redis } from 'ioredis';
import { databasePoolSizeFor, loadConfig } from '../../core/platform/config';
import { createLogger } from '../../core/platform/logger';
import { createOrganization, createApiKey } from '../../core/organizations/organizations';
import { deleteKeysWithPrefix } from '../../core/platform/redis';
import { createService } from '../../core/service/service';
import { startApi } from '../../api/server';
import { poolAddresses } from '../../db/schema';
import { processMetrics } from '../../core/platform/metrics';
import { autocannon, cpuProfiler, resultLine, type AutocannonResult } from './bench-kit';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** BENCH_CPU_PROFILE=<file.cpuprofile>: a V8 CPU profile of this process during the orders rounds. */
const PROFILE_PATH = process.env.BENCH_CPU_PROFILE;
const WARMUP_S = 2;
const BASELINE_POOL_SIZE = 10;
const BASE_DB_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const RUN = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const DB_NAME = `sg_bench_${RUN}`;
const dbUrl = (() => {
  const u = new URL(BASE_DB_URL);
  u.pathname = `/${DB_NAME}`;
  return u.toString();
})();
const PREFIX = `sgb_${RUN}`;
const randomAddress = () => getAddress(hexlify(randomBytes(20)));

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : 0);
    });
  });
}

/**
 * The load runs in a worker thread of its own, so the servers measured do not share their event
 * loop with the load generator. Every request carries a new orderReference, built per request by
 * scripts/bench/order-request.cjs (a file: a function cannot cross to the thread).
 */
async function run(name: string, url: string, headers: Record<string, string>, tag: string, duration: number): Promise<AutocannonResult> {
  return autocannon({
    title: name,
    url,
    connections: CONNECTIONS,
    duration,
    workers: 1,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-bench-tag': tag, ...headers },
        setupRequest: path.join(__dirname, 'order-request.cjs'),
      },
    ],
  });
}

/**
 * CPU time spent per request in this process (API, baseline server and load generator alike) and
 * in the postgres processes that serve this run, from /proc (Linux; elsewhere only this process is
 * counted): the backends connected to this run's database and the server's own background
 * processes (WAL writer, checkpointer, autovacuum, …), never the backends of other databases
 * (other work on a shared machine).
 */
function postgresCpuMs(): number {
  let ms = 0;
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const pid of entries) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      if (!servesThisRun(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ms += ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
    } catch {
      // The process ended meanwhile.
    }
  }
  return ms;
}
const CLOCK_TICKS = 100;

/**
 * A postgres process title: a client backend's is `postgres: [cluster: ]user database host(port) state`;
 * a background process's names its role. Client backends count only when on this run's database.
 */
function servesThisRun(title: string): boolean {
  const client = /^postgres: (?:\S+: )?\S+ (\S+) (?:\S+\(\d+\)|\[local\])/.exec(title.replace(/\0/g, ' '));
  return client === null || client[1] === DB_NAME;
}

/** CPU of this process's main thread alone: the servers measured, without the load generator. */
function mainThreadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

interface CpuSample {
  node: number;
  main: number;
  postgres: number;
}
const cpuNow = (): CpuSample => {
  const u = process.cpuUsage();
  return { node: (u.user + u.system) / 1000, main: mainThreadCpuMs(), postgres: postgresCpuMs() };
};
function cpuPerRequest(from: CpuSample, requests: number): CpuSample {
  const to = cpuNow();
  const per = (key: keyof CpuSample) => ((to[key] - from[key]) * 1000) / requests;
  return { node: per('node'), main: per('main'), postgres: per('postgres') };
}

function addCpu(total: CpuSample, sample: CpuSample, rounds: number): void {
  total.node += sample.node / rounds;
  total.main += sample.main / rounds;
  total.postgres += sample.postgres / rounds;
}

/** The round with the median throughput (its latencies are reported with it). */
function median(results: AutocannonResult[]): AutocannonResult {
  return [...results].sort((a, b) => a.requests.average - b.requests.average)[Math.floor(results.length / 2)];
}

const line = (name: string, r: AutocannonResult) => resultLine(name, r);

async function main(): Promise<void> {
  const config = loadConfig({
    DATABASE_URL: dbUrl,
    REDIS_URL,
    REDIS_PREFIX: PREFIX,
    NETWORK: 'local',
    API_STYLE: 'b',
    RATE_LIMIT_ENABLED: 'false',
    LOG_LEVEL: 'silent',
    PORT: '0',
    TOKEN_ETHEREUM_LOCAL_USDT: randomAddress(),
    ...(process.env.DATABASE_POOL_SIZE ? { DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE } : {}),
  });
  const logger = createLogger('silent');
  const { ctx, dbHandle } = await createService(config, { logger, kind: 'api' });
  const baselineSql = postgres(dbUrl, { max: BASELINE_POOL_SIZE, onnotice: () => {} });
  const servers: { close(): Promise<void> }[] = [];
  try {
    // An organization with a member key and a pool large enough for every request of the run.
    const { organizationId, ownerKey } = await createOrganization(ctx.db, 'Bench org');
    const member = await createApiKey(ctx.db, { organizationId, keyId: ownerKey.id, role: 'owner' }, organizationId, { name: 'bench', role: 'member' });
    const poolSize = Number(process.env.BENCH_POOL ?? 60_000);
    const now = Date.now();
    for (let i = 0; i < poolSize; i += 2000) {
      const rows = Array.from({ length: Math.min(2000, poolSize - i) }, (_, j) => ({
        organizationId,
        protocol: 'evm' as const,
        address: randomAddress(),
        mode: 'self_managed' as const,
        status: 'available' as const,
        createdAt: new Date(now + i + j),
      }));
      await ctx.db.insert(poolAddresses).values(rows);
    }
    // A real pool is imported well before orders arrive, and autovacuum has analyzed it by then;
    // without statistics the planner sorts the whole pool for every allocation.
    await dbHandle.sql`analyze`;
    await baselineSql`create table bench_baseline (id text primary key, reference text not null, amount numeric(78,0) not null, created_at timestamptz not null default now())`;

    // The service: a real listening API.
    const api = await startApi(ctx);
    servers.push(api);
    const ordersUrl = `http://127.0.0.1:${api.port}/api/v1/orders`;

    // The baseline: bare Express, JSON body, one INSERT.
    const app = express();
    app.use(express.json());
    app.post('/baseline', async (req, res) => {
      const id = `b_${randomBytes(8).toString('hex')}`;
      await baselineSql`insert into bench_baseline (id, reference, amount) values (${id}, ${String(req.body.orderReference)}, ${'10500000'})`;
      res.status(201).json({ id, orderReference: req.body.orderReference });
    });
    // The reference: the same, inserting the order row itself into `orders` (one fixed address).
    const [fixed] = await baselineSql<{ id: string; address: string }[]>`select id, address from pool_addresses order by id desc limit 1`;
    app.post('/baseline-order', async (req, res) => {
      const id = `ord_${randomBytes(10).toString('hex')}`;
      const now = new Date();
      const expires = new Date(now.getTime() + 600_000);
      await baselineSql`insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol,
        address, pool_address_id, status, metadata, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at, created_at, updated_at)
        values (${id}, ${organizationId}, ${String(req.body.orderReference)}, ${randomBytes(16).toString('base64url')}, ${'10500000'}, 0, ${String(req.body.currency)}, ${String(req.body.chainId)}, 'evm',
        ${fixed.address}, ${fixed.id}, 'pending', ${req.body.metadata ?? {}}, 10, 5, 3, ${expires}, ${new Date(expires.getTime() + 300_000)}, ${now}, ${now})`;
      res.status(201).json({ orderId: id, orderReference: req.body.orderReference });
    });
    const baselineServer = http.createServer(app);
    const baselinePort = await listen(baselineServer);
    servers.push({ close: () => new Promise((r) => baselineServer.close(() => r())) });
    const baselineUrl = `http://127.0.0.1:${baselinePort}/baseline`;
    const baselineOrderUrl = `http://127.0.0.1:${baselinePort}/baseline-order`;

    const auth = { 'x-api-key': member.key };

    process.stdout.write(
      `POST /orders vs bare Express + one INSERT — ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${DURATION_S} s (after ${WARMUP_S} s warm-up), pool ${poolSize} addresses; ` +
        `database connections: API ${databasePoolSizeFor(config, 'api')}, baseline ${BASELINE_POOL_SIZE}\n`,
    );
    await run('warm-baseline', baselineUrl, {}, 'wb', WARMUP_S);
    await run('warm-orders', ordersUrl, auth, 'wo', WARMUP_S);
    const baselines: AutocannonResult[] = [];
    const orderRuns: AutocannonResult[] = [];
    const cpu = { baseline: { node: 0, main: 0, postgres: 0 }, orders: { node: 0, main: 0, postgres: 0 } };
    let answered = 0;
    let failed = 0;
    const profiler = PROFILE_PATH ? await cpuProfiler() : null;
    for (let round = 1; round <= ROUNDS; round++) {
      let before = cpuNow();
      const b = await run('baseline', baselineUrl, {}, 'b', DURATION_S);
      addCpu(cpu.baseline, cpuPerRequest(before, b.requests.total), ROUNDS);
      baselines.push(b);
      before = cpuNow();
      await profiler?.start();
      const o = await run('orders', ordersUrl, auth, 'o', DURATION_S);
      addCpu(cpu.orders, cpuPerRequest(before, o.requests.total), ROUNDS);
      orderRuns.push(o);
      answered += o['2xx'];
      failed += o.non2xx;
      process.stdout.write(`  round ${round}: baseline ${b.requests.average.toFixed(0)} req/s, orders ${o.requests.average.toFixed(0)} req/s\n`);
    }
    if (profiler) await profiler.save(PROFILE_PATH!);
    const reference = await run('baseline-order', baselineOrderUrl, {}, 'r', DURATION_S);
    const baseline = median(baselines);
    const ordersRun = median(orderRuns);

    const [{ n: stored }] = await dbHandle.sql<{ n: number }[]>`select count(*)::int as n from orders where order_reference like 'o-%'`;
    process.stdout.write(`${line('bare Express + INSERT', baseline)}\n${line('POST /orders', ordersRun)}\n`);
    process.stdout.write(`${line('(ref) Express + INSERT order', reference)}\n`);
    const us = (c: CpuSample) => `this process ${c.node.toFixed(0)} us (main thread ${c.main.toFixed(0)}), postgres ${c.postgres.toFixed(0)} us`;
    process.stdout.write(`CPU per request (mean over rounds): baseline ${us(cpu.baseline)}; orders ${us(cpu.orders)}\n`);
    process.stdout.write(`orders stored in the measured rounds: ${stored} (2xx answers: ${answered})\n`);
    // How many creations the creation statements carried (the API runs in this process).
    const statements = (await processMetrics().orderCreationStatements.get()).values.filter((v) => v.labels.outcome === 'committed');
    const carried = statements.reduce((n, v) => n + Number(v.labels.orders) * v.value, 0);
    const statementCount = statements.reduce((n, v) => n + v.value, 0);
    const bySize = statements.sort((a, b) => Number(a.labels.orders) - Number(b.labels.orders)).map((v) => `${v.labels.orders}: ${v.value}`).join(', ');
    process.stdout.write(`creation statements (whole run, warm-up included): ${statementCount}, ${(carried / Math.max(statementCount, 1)).toFixed(2)} orders each on average (by orders carried: ${bySize})\n`);
    const ratio = ordersRun.requests.average / baseline.requests.average;
    process.stdout.write(`throughput ratio orders/baseline: ${ratio.toFixed(2)} (target ≥ 0.7 with p99 < 20 ms, issue 20)\n`);
    process.stdout.write(`for reference, orders / (Express + one INSERT into orders): ${(ordersRun.requests.average / reference.requests.average).toFixed(2)}\n`);
    // A request still in flight when a round ends is stored without being counted as answered.
    if (failed > 0 || reference.non2xx > 0 || stored < answered || stored > answered + CONNECTIONS * ROUNDS) process.exitCode = 1;
  } finally {
    for (const s of servers.reverse()) await s.close().catch(() => {});
    await baselineSql.end({ timeout: 5 });
    await dbHandle.close();
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    await deleteKeysWithPrefix(redis, PREFIX).catch(() => {});
    redis.disconnect();
    const admin = postgres(BASE_DB_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${DB_NAME}" with (force)`);
    await admin.end();
  }
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
