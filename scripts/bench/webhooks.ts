/**
 * Webhook delivery benchmark: deliveries per second to a local receiver with 1 and 2 worker
 * processes, and p50/p99 latency from the event row (its created_at) to receipt.
 * Uses its own database and Redis prefix, removed at the end.
 *
 *   npm run bench:webhooks            (BENCH_EVENTS=2000 by default)
 *   BENCH_WORKERS=2 BENCH_WORKER_CPU_PROFILE=/tmp/wh npm run bench:webhooks   # only the 2-process round,
 *     each worker writes a V8 .cpuprofile into /tmp/wh when it exits (read: scripts/bench/profile-top.mjs)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import postgres from 'postgres';
import { systemClock } from '../../core/platform/clock';
import { loadConfig } from '../../core/platform/config';
import { emitEvent } from '../../core/events/events';
import { createOrganization } from '../../core/organizations/organizations';
import { createProducerRedis, deleteKeysWithPrefix } from '../../core/platform/redis';
import { createWebhookEndpoint } from '../../core/webhooks/endpoints';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { runBench, percentile } from './bench-kit';

const ROOT = path.resolve(__dirname, '../..');
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
const BASE_DB_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const RUN = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const DB_NAME = `sg_bench_webhooks_${RUN}`;
const DB_URL = (() => {
  const u = new URL(BASE_DB_URL);
  u.pathname = `/${DB_NAME}`;
  return u.toString();
})();
const PREFIX = `sgb_${RUN}`;
/** The rounds: how many worker processes each runs (default 1 then 2). */
const ROUNDS = (process.env.BENCH_WORKERS ?? '1,2').split(',').map(Number);
/** A directory: each worker process writes a CPU profile of its life there (node --cpu-prof). */
const PROFILE_DIR = process.env.BENCH_WORKER_CPU_PROFILE;

const WORKER_ENV = {
  DATABASE_URL: DB_URL,
  REDIS_URL,
  REDIS_PREFIX: PREFIX,
  NETWORK: 'local',
  LOG_LEVEL: 'warn',
  WORKER_QUEUES: 'webhook-relay,webhook-delivery',
  WEBHOOK_ALLOW_INSECURE: 'true',
  WEBHOOK_RELAY_INTERVAL_MS: '100',
  WEBHOOK_RETRY_SCHEDULE: '0,1,2,4',
};

function startWorker(): Promise<ChildProcess> {
  // As `npm run start:worker` runs it (node --import tsx), with a CPU profile when asked.
  const profile = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'workers/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...WORKER_ENV, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  return new Promise((resolve, reject) => {
    // The worker logs a line per delivery: once it has started, keep only the last few KB (for the
    // error below), so reading its output costs this process (sharing the CPU) next to nothing.
    let out = '';
    let started = false;
    const keep = (c: Buffer) => {
      out = started ? (out + c.toString()).slice(-4096) : out + c.toString();
    };
    child.stdout!.on('data', (c: Buffer) => {
      keep(c);
      if (!started && out.includes('workers started')) {
        started = true;
        resolve(child);
      }
    });
    child.stderr!.on('data', keep);
    child.once('exit', (code) => reject(new Error(`worker exited (${code}): ${out}`)));
  });
}

async function stopWorker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    return;
  }
  await exited;
}


async function main() {
  await runMigrations(DB_URL);
  const dbHandle = createDb(DB_URL, { max: 5 });
  const redis = createProducerRedis(REDIS_URL);
  const workers: ChildProcess[] = [];
  const received = new Map<string, number>();
  let duplicates = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['x-service-event-id']);
      if (received.has(id)) duplicates++;
      else received.set(id, Date.now());
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"received":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  try {
    const config = loadConfig({ ...WORKER_ENV });
    const { organizationId, ownerKey } = await createOrganization(dbHandle.db, 'Bench org');
    await createWebhookEndpoint(
      { db: dbHandle.db, config, clock: systemClock },
      { organizationId, keyId: ownerKey.id, role: 'owner' },
      { url: `http://127.0.0.1:${port}/hook`, events: ['order.completed'] },
    );

    console.log(`webhook delivery benchmark: ${EVENTS} events per round, one endpoint, local receiver, relay every ${WORKER_ENV.WEBHOOK_RELAY_INTERVAL_MS} ms`);
    for (const count of ROUNDS) {
      while (workers.length < count) workers.push(await startWorker());
      received.clear();
      duplicates = 0;
      const created = new Map<string, number>();
      const t0 = Date.now();
      for (let i = 0; i < EVENTS; i += 100) {
        // 100 events per transaction, their statements pipelined on its connection: the backlog is
        // written as fast as Postgres takes it, so the figure is the delivery's, not this writer's.
        const batch = await dbHandle.db.transaction(async (tx) => {
          const ids = Array.from({ length: Math.min(EVENTS, i + 100) - i }, (_, k) => i + k);
          return Promise.all(ids.map((j) => emitEvent(tx, { organizationId, type: 'order.completed', data: { orderId: `ord_bench_${count}_${j}`, amount: '10.5' } })));
        });
        for (const e of batch) created.set(e.id, e.createdAt.getTime());
      }
      const inserted = Date.now();
      const deadline = Date.now() + 300_000;
      while ([...created.keys()].some((id) => !received.has(id))) {
        if (Date.now() > deadline) throw new Error(`only ${received.size} of ${EVENTS} delivered`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const last = Math.max(...[...created.keys()].map((id) => received.get(id)!));
      const latencies = [...created.entries()].map(([id, at]) => received.get(id)! - at).sort((a, b) => a - b);
      const seconds = (last - t0) / 1000;
      console.log(
        `${count} worker process${count > 1 ? 'es' : ''}: ${EVENTS} deliveries in ${seconds.toFixed(2)} s = ${(EVENTS / seconds).toFixed(0)} deliveries/s ` +
          `(events written in ${((inserted - t0) / 1000).toFixed(2)} s); event row → receipt p50 ${percentile(latencies, 50)} ms, ` +
          `p99 ${percentile(latencies, 99)} ms, max ${latencies.at(-1)} ms; duplicates ${duplicates}`,
      );
    }

    // Latency without a backlog: one event every 20 ms (50/s), each in its own transaction.
    received.clear();
    const steady = new Map<string, number>();
    const STEADY = Math.min(200, EVENTS);
    for (let i = 0; i < STEADY; i++) {
      const e = await dbHandle.db.transaction((tx) => emitEvent(tx, { organizationId, type: 'order.completed', data: { orderId: `ord_steady_${i}` } }));
      steady.set(e.id, e.createdAt.getTime());
      await new Promise((r) => setTimeout(r, 20));
    }
    const until = Date.now() + 60_000;
    while ([...steady.keys()].some((id) => !received.has(id))) {
      if (Date.now() > until) throw new Error('steady round not delivered');
      await new Promise((r) => setTimeout(r, 20));
    }
    const lat = [...steady.entries()].map(([id, at]) => received.get(id)! - at).sort((a, b) => a - b);
    console.log(
      `steady 50 events/s, ${workers.length} workers: event row → receipt p50 ${percentile(lat, 50)} ms, p99 ${percentile(lat, 99)} ms ` +
        `(includes waiting for the next relay run, every ${WORKER_ENV.WEBHOOK_RELAY_INTERVAL_MS} ms)`,
    );
  } finally {
    for (const w of workers) await stopWorker(w);
    server.closeAllConnections();
    server.close();
    await deleteKeysWithPrefix(redis, PREFIX).catch(() => {});
    redis.disconnect();
    await dbHandle.close();
    const admin = postgres(BASE_DB_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${DB_NAME}" with (force)`);
    await admin.end();
  }
}

runBench(main);
