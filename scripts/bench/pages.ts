/**
 * Benchmark of the hosted payment page on the real Postgres and Redis of this machine, in a
 * database and Redis prefix of its own (removed at the end):
 * - GET /pay/<token>/status for BENCH_ORDERS (1,000) distinct orders at BENCH_CONNECTIONS (50)
 *   connections, the per-IP limit raised for the run (not removed: every request still counts in
 *   Redis). Target ≥ 2,000 req/s with p99 < 20 ms.
 * - While that load runs, a payment is confirmed for a few orders (transfer + recompute in one
 *   committed transaction, as the confirmations job does); the time until the status endpoint
 *   shows `paid` is measured. Target < 1 s.
 * - GET /pay/<token> (the full page, QR code included) throughput, for reference.
 * The load generator runs in a worker thread of this same process, on the same cores.
 *
 *   npm run bench:pages
 *   BENCH_CONNECTIONS=50 BENCH_DURATION=10 BENCH_ORDERS=1000 npm run bench:pages
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { getAddress, hexlify } from 'ethers';
import { loadConfig } from '../../core/config';
import { createLogger } from '../../core/logger';
import { newId } from '../../core/ids';
import { createOrganization } from '../../core/organizations';
import { createOrder } from '../../core/orders/orders';
import { recomputeOrder } from '../../core/orders/order-state';
import { createService } from '../../core/service';
import { startApi } from '../../api/server';
import { orders, poolAddresses, transfers } from '../../db/schema';
import type { OrderRow } from '../../core/orders/order-view';
import { autocannon, benchState, resultLine, type AutocannonResult } from './bench-kit';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const ORDER_COUNT = Number(process.env.BENCH_ORDERS ?? 1000);
const CHANGES = 5;
const randomAddress = () => getAddress(hexlify(randomBytes(20)));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const line = (name: string, r: AutocannonResult) => resultLine(name, r, 34);

async function main(): Promise<void> {
  const state = benchState('pages');
  const config = loadConfig({
    DATABASE_URL: state.dbUrl,
    REDIS_URL: state.redisUrl,
    REDIS_PREFIX: state.prefix,
    NETWORK: 'local',
    LOG_LEVEL: 'silent',
    PORT: '0',
    TOKEN_ETHEREUM_LOCAL_USDT: randomAddress(),
    // Raised for the run, not removed: every request is still counted in Redis.
    PAGE_RATE_LIMIT_PER_MINUTE: '100000000',
    ...(process.env.DATABASE_POOL_SIZE ? { DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE } : {}),
  });
  const logger = createLogger('silent');
  const { ctx, dbHandle } = await createService(config, { logger, kind: 'api' });
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sg-bench-pages-'));
  let api: Awaited<ReturnType<typeof startApi>> | null = null;
  try {
    const { organizationId } = await createOrganization(ctx.db, 'Bench Coffee Roasters');
    await ctx.db.insert(poolAddresses).values(
      Array.from({ length: ORDER_COUNT }, (_, i) => ({
        organizationId, protocol: 'evm' as const, address: randomAddress(), mode: 'self_managed' as const, status: 'available' as const,
        createdAt: new Date(Date.now() - 60_000 + i),
      })),
    );
    const created: OrderRow[] = [];
    for (let i = 0; i < ORDER_COUNT; i++) {
      created.push(await createOrder(ctx, organizationId, { orderReference: `bench-${i}`, amount: '25.5', currency: 'USDT', chainId: 'ethereum-local', paymentWindowMinutes: 120, successUrl: 'https://shop.example/ok' }));
    }
    await dbHandle.sql`analyze`;
    const tokensFile = path.join(tmp, 'tokens.txt');
    writeFileSync(tokensFile, created.map((o) => o.payToken).join('\n'));
    process.env.BENCH_PAGES_TOKENS_FILE = tokensFile;

    api = await startApi(ctx);
    const base = `http://127.0.0.1:${api.port}`;
    const load = (suffix: string, duration: number) => {
      process.env.BENCH_PAGES_SUFFIX = suffix;
      return autocannon({
        url: base,
        connections: CONNECTIONS,
        duration,
        workers: 1,
        requests: [{ method: 'GET', setupRequest: path.join(__dirname, 'page-request.cjs') }],
      });
    };

    process.stdout.write(`bench:pages — ${ORDER_COUNT} orders, ${CONNECTIONS} connections, ${DURATION_S} s per run, load generator in this process (${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})\n`);
    await load('/status', 2); // warm-up

    // Status under load, with payments confirmed meanwhile.
    const statusRun = load('/status', DURATION_S);
    await sleep(2000);
    const visibleMs: number[] = [];
    for (let i = 0; i < CHANGES; i++) {
      const order = created[i * 7];
      await ctx.db.transaction(async (tx) => {
        await tx.insert(transfers).values({
          id: newId('trf'), chainId: order.chainId, protocol: 'evm', currency: order.currency, tokenAddress: randomAddress(),
          amount: order.amount, fromAddress: randomAddress(), toAddress: order.address, txHash: hexlify(randomBytes(32)), indexInTx: 0, logIndex: 0,
          blockNumber: 100 + i, blockHash: hexlify(randomBytes(32)), blockTimestamp: new Date(), confirmations: 3, status: 'confirmed',
          organizationId, poolAddressId: order.poolAddressId, orderId: order.id, counted: true, confirmedAt: new Date(),
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

    const pageRun = await load('', DURATION_S);
    const [check] = await ctx.db.select({ status: orders.status }).from(orders).where(eq(orders.id, created[0].id));

    process.stdout.write(`${line('GET /pay/<token>/status', status)}   target ≥ 2000 req/s, p99 < 20 ms\n`);
    process.stdout.write(
      `committed payment → status shows paid  max ${Math.max(...visibleMs).toFixed(0)} ms (of ${CHANGES}: ${visibleMs.map((v) => v.toFixed(0)).join(', ')} ms)   target < 1000 ms (order 0 now ${check.status})\n`,
    );
    process.stdout.write(`${line('GET /pay/<token> (full page)', pageRun)}\n`);
  } finally {
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
