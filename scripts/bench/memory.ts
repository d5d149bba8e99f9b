/**
 * Memory and start-up of the service's processes, as production runs them: the API, a worker and
 * the all-in-one (`npm start`'s entry), each from the TypeScript sources through tsx and from the
 * compiled build (dist/, `npm run build` first). Per process: time from spawn to healthy (the API
 * answers GET /health 200; a worker's metrics endpoint answers), resident memory (RSS) and V8 heap
 * used when idle, then under load — 5 s of POST /orders (API), a burst of BENCH_DELIVERIES webhook
 * deliveries to a local receiver (worker), both (all-in-one) — with the peak RSS sampled every 100 ms.
 * Uses its own database and Redis prefix (removed at the end); NETWORK=testnet with the chains'
 * RPC pointed at a closed local port (no chain answers, as a cut-off host would see).
 *
 *   npm run build && npm run bench:memory
 *   BENCH_MODES=dist BENCH_PROCESSES=worker BENCH_DELIVERIES=10000 npm run bench:memory
 *   BENCH_NODE_OPTIONS="--max-old-space-size=96" BENCH_MODES=dist npm run bench:memory   # a heap limit
 *   BENCH_HEAP_SNAPSHOTS=/tmp/heap npm run bench:memory   # a .heapsnapshot per process, idle and loaded
 *     (summarize with: node scripts/bench/heap-summary.mjs <file>)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { getAddress, hexlify } from 'ethers';
import { systemClock } from '../../core/platform/clock';
import { loadConfig } from '../../core/platform/config';
import { emitEvent } from '../../core/events/events';
import { createApiKey, createOrganization } from '../../core/organizations/organizations';
import { createProducerRedis } from '../../core/platform/redis';
import { createWebhookEndpoint } from '../../core/webhooks/endpoints';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { poolAddresses } from '../../db/schema';
import { createQueues, closeQueues } from '../../core/jobs/catalog';
import { autocannon, benchState, runBench } from './bench-kit';

const ROOT = path.resolve(__dirname, '../..');
const MODES = (process.env.BENCH_MODES ?? 'tsx,dist').split(',') as ('tsx' | 'dist')[];
const PROCESSES = (process.env.BENCH_PROCESSES ?? 'api,worker,all').split(',') as ProcessKind[];
const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 10_000);
const NODE_OPTIONS = (process.env.BENCH_NODE_OPTIONS ?? '').split(' ').filter(Boolean);
const SNAPSHOT_DIR = process.env.BENCH_HEAP_SNAPSHOTS;
const store = benchState('memory');
const { dbUrl: DB_URL, redisUrl: REDIS_URL, prefix: PREFIX } = store;

type ProcessKind = 'api' | 'worker' | 'all';
const ENTRIES: Record<ProcessKind, string> = { api: 'api/main', worker: 'workers/main', all: 'scripts/start' };

/** Free ports, held until all are found (two asked one after the other could be the same). */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () => new Promise<net.Server>((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}
const freePort = async () => (await freePorts(1))[0];

/** CPU time (user + system) the process has used: start-up cost on a machine whose wall clock is shared. */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    http
      .get(url, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', () => resolve({ status: 0, body: '' }));
  });
}

async function heapUsedMb(metricsPort: number): Promise<number> {
  const { body } = await get(`http://127.0.0.1:${metricsPort}/metrics`);
  const m = /^\w*nodejs_heap_size_used_bytes (\S+)$/m.exec(body);
  return m ? Number(m[1]) / 1024 / 1024 : NaN;
}

interface Running {
  child: ChildProcess;
  port: number;
  metricsPort: number;
  startMs: number;
  startCpuMs: number;
}

async function start(kind: ProcessKind, mode: 'tsx' | 'dist', env: Record<string, string>): Promise<Running> {
  const [port, metricsPort] = await freePorts(2);
  const args = mode === 'tsx' ? ['--import', 'tsx', `${ENTRIES[kind]}.ts`] : ['--enable-source-maps', `dist/${ENTRIES[kind]}.js`];
  const snapshot = SNAPSHOT_DIR ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${SNAPSHOT_DIR}`] : [];
  const t0 = performance.now();
  const child = spawn(process.execPath, [...NODE_OPTIONS, ...snapshot, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, PORT: String(port), METRICS_PORT: String(metricsPort) },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let err = '';
  child.stderr!.on('data', (c) => (err = (err + c).slice(-4000)));
  const healthUrl = kind === 'worker' ? `http://127.0.0.1:${metricsPort}/metrics` : `http://127.0.0.1:${port}/health`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${kind} (${mode}) exited: ${err}`);
    if ((await get(healthUrl)).status === 200) break;
    if (performance.now() - t0 > 60_000) throw new Error(`${kind} (${mode}) not healthy after 60 s: ${err}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return { child, port, metricsPort, startMs: performance.now() - t0, startCpuMs: cpuMs(child.pid!) };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(-child.pid!, 'SIGTERM');
  await exited;
}

/** Writes a heap snapshot of the process (SIGUSR2, node --heapsnapshot-signal) named after `label`. */
async function snapshot(child: ChildProcess, label: string): Promise<void> {
  if (!SNAPSHOT_DIR) return;
  const before = new Set(readdirSync(SNAPSHOT_DIR));
  process.kill(child.pid!, 'SIGUSR2');
  for (let i = 0; i < 600; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const made = readdirSync(SNAPSHOT_DIR).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
    // Written when its size stops changing.
    if (made) {
      await new Promise((r) => setTimeout(r, 1500));
      renameSync(path.join(SNAPSHOT_DIR, made), path.join(SNAPSHOT_DIR, `${label}.heapsnapshot`));
      return;
    }
  }
}

/** Samples the process's RSS every 100 ms while `work` runs; the peak. */
async function peakRssDuring(pid: number, work: () => Promise<void>): Promise<number> {
  let peak = rssMb(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(pid));
    } catch {
      // exited
    }
  }, 100);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(peak, rssMb(pid));
}

/**
 * Redis memory per 10,000 waiting jobs: a private redis-server (nothing else in it), 10,000
 * webhook-delivery jobs added as the relay adds them, no worker; INFO memory before and after.
 */
async function redisMemoryPerWaitingJobs(): Promise<string> {
  const port = await freePort();
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const redis = createProducerRedis(`redis://127.0.0.1:${port}`);
  redis.on('error', () => {}); // until it is up, and as it stops
  try {
    for (let i = 0; redis.status !== 'ready'; i++) {
      if (i > 100) throw new Error('private redis-server did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const used = async () => Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))![1]);
    const queues = createQueues(redis, 'sg');
    await queues['webhook-delivery'].add('warm-up', { deliveryId: 'whd_warmup', attempt: 1 }, { jobId: 'webhook-delivery-warmup' });
    const before = await used();
    for (let i = 0; i < 10_000; i += 500) {
      await queues['webhook-delivery'].addBulk(
        Array.from({ length: 500 }, (_, k) => {
          const deliveryId = `whd_${randomBytes(13).toString('hex')}`;
          return { name: 'deliver', data: { deliveryId, attempt: 1 }, opts: { jobId: `webhook-delivery-${deliveryId}-1` } };
        }),
      );
    }
    const after = await used();
    await closeQueues(queues);
    return `Redis memory per 10,000 waiting webhook-delivery jobs: ${((after - before) / 1048576).toFixed(1)} MB (${Math.round((after - before) / 10_000)} bytes a job)`;
  } finally {
    redis.disconnect();
    server.kill('SIGTERM');
  }
}

async function main() {
  if (process.env.BENCH_REDIS_ONLY) {
    console.log(await redisMemoryPerWaitingJobs());
    return;
  }
  if (MODES.includes('dist') && !existsSync(path.join(ROOT, 'dist/api/main.js'))) throw new Error('dist/ is missing: run npm run build first');
  if (SNAPSHOT_DIR) mkdirSync(SNAPSHOT_DIR, { recursive: true });
  await runMigrations(DB_URL);
  const dbHandle = createDb(DB_URL, { max: 5 });
  const received = new Set<string>();
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.add(String(req.headers['x-service-event-id']));
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"received":true}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverPort = (receiver.address() as net.AddressInfo).port;
  const deadRpc = `http://127.0.0.1:${await freePort()}`;
  const env: Record<string, string> = {
    DATABASE_URL: DB_URL,
    REDIS_URL,
    REDIS_PREFIX: PREFIX,
    NETWORK: 'testnet',
    SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    ALLOW_INSECURE_PUBLIC_URL: 'true',
    WEBHOOK_ALLOW_INSECURE: 'true',
    WEBHOOK_RELAY_INTERVAL_MS: '100',
    RATE_LIMIT_ENABLED: 'false',
    LOG_LEVEL: 'error',
    RPC_URLS_ETHEREUM_SEPOLIA: deadRpc,
    RPC_URLS_POLYGON_AMOY: deadRpc,
    RPC_URLS_TRON_NILE: deadRpc,
    RPC_URLS_SOLANA_DEVNET: deadRpc,
    // Sepolia has no official USDT: any contract address lets the orders name USDT.
    TOKEN_ETHEREUM_SEPOLIA_USDT: getAddress(hexlify(randomBytes(20))),
  };
  const rows: string[][] = [];
  try {
    const config = loadConfig({ ...env });
    const { organizationId, ownerKey } = await createOrganization(dbHandle.db, 'Bench org');
    const member = await createApiKey(dbHandle.db, { organizationId, keyId: ownerKey.id, role: 'owner' }, organizationId, { name: 'bench', role: 'member' });
    await createWebhookEndpoint({ db: dbHandle.db, config, clock: systemClock }, { organizationId, keyId: ownerKey.id, role: 'owner' }, { url: `http://127.0.0.1:${receiverPort}/hook`, events: ['order.completed'] });
    for (let i = 0; i < 100_000; i += 2000) {
      const now = Date.now();
      await dbHandle.db.insert(poolAddresses).values(
        Array.from({ length: 2000 }, (_, j) => ({ organizationId, protocol: 'evm' as const, address: getAddress(hexlify(randomBytes(20))), mode: 'self_managed' as const, status: 'available' as const, createdAt: new Date(now + j) })),
      );
    }
    await dbHandle.sql`analyze`;
    console.log(`load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} (start-up wall time grows with it; its CPU time much less)`);
    console.log(`processes: ${PROCESSES.join(', ')}; modes: ${MODES.join(', ')}; node options: ${NODE_OPTIONS.join(' ') || '(none)'}; burst ${DELIVERIES} deliveries`);

    const ordersLoad = async (port: number) => {
      const r = await autocannon({
        url: `http://127.0.0.1:${port}/api/v1/orders`,
        connections: 10,
        duration: 5,
        workers: 1,
        requests: [{ method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': member.key, 'x-bench-tag': `m${randomBytes(4).toString('hex')}`, 'x-bench-chain': 'ethereum-sepolia' }, setupRequest: path.join(__dirname, 'order-request.cjs') }],
      });
      return `${Math.round(r.requests.average)} orders/s, ${r.non2xx} non-2xx`;
    };
    const deliveryBurst = async () => {
      received.clear();
      const ids: string[] = [];
      const t0 = Date.now();
      for (let i = 0; i < DELIVERIES; i += 500) {
        const batch = await dbHandle.db.transaction((tx) => Promise.all(Array.from({ length: Math.min(500, DELIVERIES - i) }, (_, k) => emitEvent(tx, { organizationId, type: 'order.completed', data: { orderId: `ord_mem_${i + k}`, amount: '10.5' } }))));
        ids.push(...batch.map((e) => e.id));
      }
      while (ids.some((id) => !received.has(id))) {
        if (Date.now() - t0 > 600_000) throw new Error(`only ${received.size} of ${DELIVERIES} delivered`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const s = (Date.now() - t0) / 1000;
      return `${DELIVERIES} deliveries in ${s.toFixed(1)} s from the first event written (${Math.round(DELIVERIES / s)}/s)`;
    };

    for (const kind of PROCESSES) {
      for (const mode of MODES) {
        const p = await start(kind, mode, env);
        await new Promise((r) => setTimeout(r, 5000));
        const idleRss = rssMb(p.child.pid!);
        const idleHeap = await heapUsedMb(p.metricsPort);
        await snapshot(p.child, `${kind}-${mode}-idle`);
        let load = '';
        const peak = await peakRssDuring(p.child.pid!, async () => {
          const parts: string[] = [];
          if (kind !== 'worker') parts.push(await ordersLoad(p.port));
          if (kind !== 'api') parts.push(await deliveryBurst());
          load = parts.join('; ');
        });
        const afterRss = rssMb(p.child.pid!);
        const afterHeap = await heapUsedMb(p.metricsPort);
        await snapshot(p.child, `${kind}-${mode}-loaded`);
        await stop(p.child);
        const row = [kind, mode, `${p.startMs.toFixed(0)} ms (CPU ${p.startCpuMs.toFixed(0)} ms)`, `${idleRss.toFixed(0)} MB`, `${idleHeap.toFixed(0)} MB`, `${peak.toFixed(0)} MB`, `${afterRss.toFixed(0)} MB`, `${afterHeap.toFixed(0)} MB`, load];
        rows.push(row);
        console.log(`${kind.padEnd(6)} ${mode.padEnd(4)}: healthy in ${row[2]}; idle RSS ${row[3]} (heap used ${row[4]}); under load peak RSS ${row[5]}, after ${row[6]} (heap used ${row[7]}); load: ${load}`);
      }
    }
    console.log(await redisMemoryPerWaitingJobs());
    console.log('\n| process | run from | start to healthy (CPU) | idle RSS | idle heap used | peak RSS under load | RSS after load | heap used after | load |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  } finally {
    receiver.closeAllConnections();
    receiver.close();
    await dbHandle.close();
    await store.remove();
  }
}

runBench(main);
