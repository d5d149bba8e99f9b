/**
 * Benchmark of the hosted payment page on the real Postgres and Redis of this machine, in a
 * database and Redis prefix of its own (removed at the end):
 * - GET /pay/<token>/status for BENCH_ORDERS (1,000) distinct orders at BENCH_CONNECTIONS (50)
 *   connections, the per-IP limit raised for the run (not removed: every request still counts in
 *   Redis). Target ≥ 2,000 req/s with p99 < 20 ms: throughput measured saturated (every
 *   connection sends as soon as it has its answer), p99 measured at 2,000 req/s offered
 *   (BENCH_RATE), where latency is the service's and not the length of a closed loop's queue
 *   (saturated, 50 connections wait on each other: mean latency = 50 / throughput).
 * - While that load runs, a payment is confirmed for a few orders (transfer + recompute in one
 *   committed transaction, as the confirmations job does); the time until the status endpoint
 *   shows `paid` is measured. Target < 1 s.
 * - GET /pay/<token> (the full page, QR code included) throughput, for reference.
 * - The payment links' checkout (issue 28): GET /l/<slug> (the page) and POST /l/<slug>/orders
 *   (a form post through the public write kit that makes an order, 303 to its payment page):
 *   req/s saturated at BENCH_CHECKOUT_CONNECTIONS (20) and p99 at BENCH_CHECKOUT_RATE (200 req/s)
 *   offered, BENCH_CHECKOUT_DURATION (5 s) each. The checkout budgets are raised for the run (still
 *   counted in Redis); every post takes a pool address, so the pool gets BENCH_CHECKOUT_POOL (8,000).
 * The load generator (autocannon) runs in a child process of its own, on the same cores, alive for
 * the whole bench so that the warm-up also warms the generator that measures.
 *
 *   npm run bench:pages
 *   BENCH_CONNECTIONS=50 BENCH_DURATION=10 BENCH_ORDERS=1000 BENCH_RATE=2000 npm run bench:pages
 *   BENCH_CPU_PROFILE=/tmp/pages.cpuprofile npm run bench:pages   # V8 profile of the main thread during the status run
 *   node scripts/bench/profile-top.mjs /tmp/pages.cpuprofile        # its self time by function and by package
 *
 * Besides latency it prints, for the status run, where the CPU went per request (this process's
 * main thread, i.e. the API; its other threads; the load generator; Postgres; Redis), and for both
 * status runs the main thread's event-loop delay and its garbage-collection pauses.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { getAddress, hexlify } from 'ethers';
import { createLogger } from '../../core/platform/logger';
import { newId } from '../../core/platform/ids';
import { createOrganization } from '../../core/organizations/organizations';
import { createOrder } from '../../core/orders/orders';
import { recomputeOrder } from '../../core/orders/order-state';
import { createPaymentLink, getPaymentLink, publishPaymentLink } from '../../core/payment-links/links';
import { createService } from '../../core/service/service';
import { startApi } from '../../api/server';
import { orders, poolAddresses, transfers } from '../../db/schema';
import type { OrderRow } from '../../core/views/order';
import { benchState, cpuProfiler, localBenchConfig, resultLine, startLoadGenerator, type AutocannonResult, type LoadGenerator } from './bench-kit';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const ORDER_COUNT = Number(process.env.BENCH_ORDERS ?? 1000);
/** The throughput the status endpoint must sustain, and the offered load its p99 is measured at. */
const TARGET_RATE = Number(process.env.BENCH_RATE ?? 2000);
const CHANGES = 5;
const CHECKOUT_CONNECTIONS = Number(process.env.BENCH_CHECKOUT_CONNECTIONS ?? 20);
const CHECKOUT_RATE = Number(process.env.BENCH_CHECKOUT_RATE ?? 200);
const CHECKOUT_DURATION_S = Number(process.env.BENCH_CHECKOUT_DURATION ?? 5);
const CHECKOUT_POOL = Number(process.env.BENCH_CHECKOUT_POOL ?? 8000);
const randomAddress = () => getAddress(hexlify(randomBytes(20)));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const line = (name: string, r: AutocannonResult) => resultLine(name, r, 44);
/** BENCH_CPU_PROFILE=<file.cpuprofile>: a V8 CPU profile of the main thread during the status run. */
const PROFILE_PATH = process.env.BENCH_CPU_PROFILE;
const CLOCK_TICKS = 100;

/** utime + stime of a /proc stat line, in ms. */
function statCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
function readCpu(file: string): number {
  try {
    return statCpuMs(readFileSync(file, 'utf8'));
  } catch {
    return 0; // gone meanwhile, or not Linux
  }
}
/** CPU (ms) of processes whose command line matches, from /proc (Linux). */
function processesCpuMs(match: (cmdline: string) => boolean): number {
  let ms = 0;
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    try {
      if (match(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '))) ms += readCpu(`/proc/${pid}/stat`);
    } catch {
      // ended meanwhile
    }
  }
  return ms;
}
interface CpuSample { main: number; others: number; loadGenerator: number; postgres: number; redis: number; wall: number }
function cpuNow(dbName: string, loadGeneratorPid: number): CpuSample {
  const main = readCpu(`/proc/self/task/${process.pid}/stat`);
  let all = 0;
  try {
    all = readdirSync('/proc/self/task').reduce((sum, tid) => sum + readCpu(`/proc/self/task/${tid}/stat`), 0);
  } catch {
    // not Linux
  }
  const redisPort = new URL(process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379').port || '6379';
  return {
    main,
    others: all - main,
    loadGenerator: readCpu(`/proc/${loadGeneratorPid}/stat`),
    // This run's own backends: other databases' work on this machine is not the API's.
    postgres: processesCpuMs((c) => c.startsWith('postgres') && c.includes(` ${dbName} `)),
    redis: processesCpuMs((c) => c.startsWith('redis-server') && c.includes(`:${redisPort}`)),
    wall: performance.now(),
  };
}
function cpuLine(from: CpuSample, to: CpuSample, requests: number): string {
  const per = (k: keyof CpuSample) => (((to[k] - from[k]) * 1000) / requests).toFixed(0).padStart(4);
  const busy = (k: keyof CpuSample) => (((to[k] - from[k]) / (to.wall - from.wall)) * 100).toFixed(0);
  return (
    `CPU per status request: API main thread ${per('main')} us (${busy('main')}% of a core), its other threads ${per('others')} us (${busy('others')}%), load generator ${per('loadGenerator')} us (${busy('loadGenerator')}%), ` +
    `postgres (this database) ${per('postgres')} us (${busy('postgres')}%), redis ${per('redis')} us (${busy('redis')}%)`
  );
}

async function main(): Promise<void> {
  const state = benchState('pages');
  const config = localBenchConfig(state, {
    // Raised for the run, not removed: every request is still counted in Redis.
    PAGE_RATE_LIMIT_PER_MINUTE: '100000000',
    CHECKOUT_ORDERS_PER_IP: '100000000',
    CHECKOUT_ORDERS_PER_LINK_PER_MINUTE: '100000000',
  });
  const logger = createLogger('silent');
  const { ctx, dbHandle } = await createService(config, { logger, kind: 'api' });
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sg-bench-pages-'));
  let api: Awaited<ReturnType<typeof startApi>> | null = null;
  let loadGenerator: LoadGenerator | null = null;
  try {
    const { organizationId } = await createOrganization(ctx.db, 'Bench Coffee Roasters');
    await ctx.db.insert(poolAddresses).values(
      Array.from({ length: ORDER_COUNT }, (_, i) => ({
        organizationId, protocol: 'evm' as const, address: randomAddress(), mode: 'self_managed' as const, status: 'available' as const,
        createdAt: new Date(Date.now() - 60_000 + i),
      })),
    );
    for (let i = 0; i < CHECKOUT_POOL; i += 2000) {
      await ctx.db.insert(poolAddresses).values(
        Array.from({ length: Math.min(2000, CHECKOUT_POOL - i) }, (_, j) => ({
          organizationId, protocol: 'evm' as const, address: randomAddress(), mode: 'self_managed' as const, status: 'available' as const,
          createdAt: new Date(Date.now() - 30_000 + i + j),
        })),
      );
    }
    const link = await publishPaymentLink(ctx, organizationId, (await createPaymentLink(ctx, organizationId, {
      title: 'Bench T-shirt', description: 'Size M', amount: '12.5', currencies: [{ currency: 'USDT', chainId: 'ethereum-local' }],
    })).id);
    const created: OrderRow[] = [];
    for (let i = 0; i < ORDER_COUNT; i++) {
      created.push(await createOrder(ctx, organizationId, { orderReference: `bench-${i}`, amount: '25.5', currency: 'USDT', chainId: 'ethereum-local', paymentWindowMinutes: 120, successUrl: 'https://shop.example/ok' }));
    }
    await dbHandle.sql`analyze`;
    const tokensFile = path.join(tmp, 'tokens.txt');
    writeFileSync(tokensFile, created.map((o) => o.payToken).join('\n'));
    process.env.BENCH_PAGES_TOKENS_FILE = tokensFile;
    loadGenerator = startLoadGenerator();
    const generator = loadGenerator;

    api = await startApi(ctx);
    const base = `http://127.0.0.1:${api.port}`;
    // overallRate: a fixed offered load (autocannon then corrects latencies for coordinated
    // omission); without it, every connection sends as fast as the server answers.
    const load = (suffix: string, duration: number, overallRate?: number) =>
      generator.run({
        url: base,
        connections: CONNECTIONS,
        duration,
        ...(overallRate ? { overallRate } : {}),
        initialContext: { suffix },
        requests: [{ method: 'GET', setupRequest: path.join(__dirname, 'page-request.cjs') }],
      });

    process.stdout.write(`bench:pages — ${ORDER_COUNT} orders, ${CONNECTIONS} connections, ${DURATION_S} s per run, load generator in a process of its own (${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})\n`);
    await load('/status', 2); // warm-up

    // Status under load, with payments confirmed meanwhile.
    const profiler = PROFILE_PATH ? await cpuProfiler() : null;
    await profiler?.start();
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    let gcMs = 0;
    let gcMax = 0;
    let gcCount = 0;
    const gcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        gcMs += e.duration;
        gcMax = Math.max(gcMax, e.duration);
        gcCount++;
      }
    });
    gcObserver.observe({ entryTypes: ['gc'] });
    loopDelay.enable();
    const dbName = new URL(state.dbUrl).pathname.slice(1);
    const cpuBefore = cpuNow(dbName, generator.pid);
    const statusRun = load('/status', DURATION_S);
    await sleep(2000);
    const visibleMs: number[] = [];
    for (let i = 0; i < CHANGES; i++) {
      const order = created[i * 7];
      await ctx.db.transaction(async (tx) => {
        await tx.insert(transfers).values({
          id: newId('trf'), chainId: order.chainId!, protocol: 'evm', currency: order.currency, tokenAddress: randomAddress(),
          amount: order.amount, fromAddress: randomAddress(), toAddress: order.address!, txHash: hexlify(randomBytes(32)), indexInTx: 0, logIndex: 0,
          blockNumber: 100 + i, blockHash: hexlify(randomBytes(32)), blockTimestamp: new Date(), confirmations: 3, status: 'confirmed',
          organizationId, poolAddressId: order.poolAddressId!, orderId: order.id, counted: true, confirmedAt: new Date(),
        });
        await recomputeOrder(tx, ctx, order.id);
      });
      const committed = performance.now();
      for (;;) {
        const res = await fetch(`${base}/pay/${order.payToken}/status`);
        const body = (await res.json()) as { state: string };
        if (body.state === 'paid') break;
        if (performance.now() - committed > 10_000) throw new Error(`order ${order.id} not shown paid after 10 s`);
        await sleep(10);
      }
      visibleMs.push(performance.now() - committed);
      await sleep(500);
    }
    const status = await statusRun;
    const cpuAfter = cpuNow(dbName, generator.pid);
    loopDelay.disable();
    gcObserver.disconnect();
    if (profiler) await profiler.save(PROFILE_PATH!);
    const statusWallS = (cpuAfter.wall - cpuBefore.wall) / 1000;

    const targetDelay = monitorEventLoopDelay({ resolution: 1 });
    const targetGc: number[] = [];
    const targetGcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) targetGc.push(e.duration);
    });
    targetGcObserver.observe({ entryTypes: ['gc'] });
    targetDelay.enable();
    const statusAtTarget = await load('/status', DURATION_S, TARGET_RATE);
    targetDelay.disable();
    targetGcObserver.disconnect();
    const pageRun = await load('', DURATION_S);
    const [check] = await ctx.db.select({ status: orders.status }).from(orders).where(eq(orders.id, created[0].id));

    // The checkout: its page, and its post (each one an order and a pool address).
    const checkoutPath = `/l/${link.slug}`;
    const checkout = (method: 'GET' | 'POST', duration: number, overallRate?: number) =>
      generator.run({
        url: base,
        connections: CHECKOUT_CONNECTIONS,
        duration,
        ...(overallRate ? { overallRate } : {}),
        requests: [
          method === 'GET'
            ? { method, path: checkoutPath }
            : { method, path: `${checkoutPath}/orders`, headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base }, body: 'choice=USDT%40ethereum-local' },
        ],
      });
    await checkout('GET', 1); // warm-up
    const checkoutPage = await checkout('GET', CHECKOUT_DURATION_S);
    const checkoutPageAtRate = await checkout('GET', CHECKOUT_DURATION_S, CHECKOUT_RATE);
    const ordersBefore = (await getPaymentLink(ctx.db, organizationId, link.id)).ordersCreated;
    const checkoutPost = await checkout('POST', CHECKOUT_DURATION_S);
    const checkoutPostAtRate = await checkout('POST', CHECKOUT_DURATION_S, CHECKOUT_RATE);
    const ordersMade = (await getPaymentLink(ctx.db, organizationId, link.id)).ordersCreated - ordersBefore;
    const answered303 = (r: AutocannonResult) => (r as unknown as { '3xx'?: number })['3xx'] ?? 0;

    process.stdout.write(`${line('GET /pay/<token>/status, saturated', status)}   target ≥ ${TARGET_RATE} req/s\n`);
    process.stdout.write(`${line(`GET /pay/<token>/status at ${TARGET_RATE} req/s offered`, statusAtTarget)}   target p99 < 20 ms\n`);
    process.stdout.write(`  ${cpuLine(cpuBefore, cpuAfter, status.requests.total)}\n`);
    const ms = (ns: number) => (ns / 1e6).toFixed(1);
    process.stdout.write(
      `  main thread: event-loop delay p50 ${ms(loopDelay.percentile(50))} ms, p99 ${ms(loopDelay.percentile(99))} ms, max ${ms(loopDelay.max)} ms; ` +
        `GC ${gcCount} pauses, ${gcMs.toFixed(0)} ms in ${statusWallS.toFixed(1)} s (${((gcMs / (statusWallS * 1000)) * 100).toFixed(1)}%), longest ${gcMax.toFixed(1)} ms\n`,
    );
    process.stdout.write(
      `  at ${TARGET_RATE} req/s: main thread event-loop delay p50 ${ms(targetDelay.percentile(50))} ms, p99 ${ms(targetDelay.percentile(99))} ms, max ${ms(targetDelay.max)} ms; ` +
        `GC ${targetGc.length} pauses, ${targetGc.reduce((a, b) => a + b, 0).toFixed(0)} ms, longest ${Math.max(0, ...targetGc).toFixed(1)} ms\n`,
    );
    process.stdout.write(
      `committed payment → status shows paid  max ${Math.max(...visibleMs).toFixed(0)} ms (of ${CHANGES}: ${visibleMs.map((v) => v.toFixed(0)).join(', ')} ms)   target < 1000 ms (order 0 now ${check.status})\n`,
    );
    process.stdout.write(`${line('GET /pay/<token> (full page)', pageRun)}\n`);
    process.stdout.write(`${line('GET /l/<slug> (checkout page), saturated', checkoutPage)}\n`);
    process.stdout.write(`${line(`GET /l/<slug> at ${CHECKOUT_RATE} req/s offered`, checkoutPageAtRate)}\n`);
    process.stdout.write(`${line('POST /l/<slug>/orders (checkout), saturated', checkoutPost)}\n`);
    process.stdout.write(`${line(`POST /l/<slug>/orders at ${CHECKOUT_RATE} req/s offered`, checkoutPostAtRate)}\n`);
    process.stdout.write(
      `  checkout posts answered 303 (an order each): ${answered303(checkoutPost)} + ${answered303(checkoutPostAtRate)}; orders made from the link: ${ordersMade} (${CHECKOUT_CONNECTIONS} connections, ${CHECKOUT_DURATION_S} s per run)\n`,
    );
  } finally {
    loadGenerator?.close();
    await api?.close().catch(() => {});
    await dbHandle.close();
    rmSync(tmp, { recursive: true, force: true });
    await state.remove();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
