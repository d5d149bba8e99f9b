/**
 * Webhook delivery benchmark: deliveries per second to a local receiver with 1 and 2 worker
 * processes, and p50/p99 latency from the event row (its created_at) to receipt.
 * Uses its own database and Redis prefix, removed at the end.
 *
 *   npm run bench:webhooks            (BENCH_EVENTS=2000 by default)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import postgres from 'postgres';
import { systemClock } from '../../core/clock';
import { loadConfig } from '../../core/config';
import { emitEvent } from '../../core/events';
import { createOrganization } from '../../core/organizations';
import { createProducerRedis, deleteKeysWithPrefix } from '../../core/redis';
import { createWebhookEndpoint } from '../../core/webhooks/endpoints';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { runBench } from './bench-kit';

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
  const child = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), ['workers/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...WORKER_ENV, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('workers started')) resolve(child);
    });
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
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

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

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
    for (const count of [1, 2]) {
      while (workers.length < count) workers.push(await startWorker());
      received.clear();
      duplicates = 0;
      const created = new Map<string, number>();
      const t0 = Date.now();
      for (let i = 0; i < EVENTS; i += 100) {
        const batch = await dbHandle.db.transaction(async (tx) => {
          const out = [];
          for (let j = i; j < Math.min(EVENTS, i + 100); j++) {
            out.push(await emitEvent(tx, { organizationId, type: 'order.completed', data: { orderId: `ord_bench_${count}_${j}`, amount: '10.5' } }));
          }
          return out;
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
