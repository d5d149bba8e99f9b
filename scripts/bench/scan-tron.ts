/**
 * `npm run bench:scan` (Tron part): the Tron adapter on the detection core against tron-local,
 * real Postgres and Redis. Prints:
 *  1. for 1,000 blocks with token transfers: HTTP calls and scan time with 100 and with 100,000
 *     Tron pool addresses (target: ratio ≤ 1.1);
 *  2. catch-up of BENCH_CATCH_UP_BLOCKS (default 1,200) solidified blocks mined at once, a transfer
 *     every 10 blocks (target < 20 s for 1,200; < 30 s for 100,000);
 *  3. latency from the block that solidifies a payment to the order.completed row, with the real
 *     workers polling (target p50 < 1 s beyond the poll interval).
 * Uses its own database (dropped at the end), Redis prefix and tron-local state. Not a timed test.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { eq, sql } from 'drizzle-orm';
import { ChainRegistry } from '../../core/chains/registry';
import { TronAdapter } from '../../core/chains/tron/tron-adapter';
import { TronHttp } from '../../core/chains/tron/tron-http';
import { applyTronLocalState, TRON_LOCAL_CHAIN_ID } from '../../core/chains/tron/tron-local-state';
import { tronAddressFromEvm } from '../../core/chains/tron/tron-address';
import { resetCheckpoint } from '../../core/detection/scan-position';
import { scanChain } from '../../core/detection/scan';
import { DetectionState } from '../../core/service/detection-state';
import { loadConfig } from '../../core/platform/config';
import { createOrder } from '../../core/orders/orders';
import { createOrganization } from '../../core/organizations/organizations';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { poolAddresses, scannedBlocks, transfers } from '../../db/schema';
import { startWorkerProcess } from '../../workers/runtime';
import { TronLocalNode } from '../local-chain/tron/tron-local-node';
import { benchContext, benchStore, completionLatency, insertPool, ms, reportLatencies, reportTimes, sleep, timedAdapter, runScanBench } from './scan-support';

const BLOCKS = 1000;
const RECEIVERS_PER_BLOCK = 5;
const CATCH_UP_BLOCKS = Number(process.env.BENCH_CATCH_UP_BLOCKS ?? 1200);
const CATCH_UP_TARGET_MS = Math.max(20_000, (CATCH_UP_BLOCKS / 100_000) * 30_000);
const LATENCY_ORDERS = 10;

const store = benchStore('tron');
const { dbUrl, redisPrefix } = store;
const randomTron = () => tronAddressFromEvm(`0x${randomBytes(20).toString('hex')}`);

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, DATABASE_URL: dbUrl, REDIS_PREFIX: redisPrefix, NETWORK: 'local', LOG_LEVEL: 'warn' });
  await runMigrations(dbUrl);
  const dbHandle = createDb(dbUrl, { max: 10 });
  const node = new TronLocalNode({ blockTimeMs: 0, solidificationLag: 2 });
  await node.start();
  let workers: Awaited<ReturnType<typeof startWorkerProcess>> | null = null;
  try {
    // This family only: the workers of the latency part would otherwise also poll ethereum-local and solana-local,
    // which this benchmark does not run, and their failing jobs hold the queues' workers.
    const registry = ChainRegistry.forNetwork('local', ['tron']);
    applyTronLocalState(registry, { rpcUrl: node.url, genesisHash: node.genesisHash, token: node.token, startedAt: new Date().toISOString() });
    const ctx = benchContext(config, dbHandle.db, registry);
    const chain = registry.get(TRON_LOCAL_CHAIN_ID)!;
    const { organizationId } = await createOrganization(dbHandle.db, 'Bench org');
    const receivers = Array.from({ length: 100 }, randomTron);
    await insertPool(ctx, organizationId, 'tron', receivers);

    // 1,000 blocks, each with one transaction of 5 transfers to pool addresses and 1 elsewhere.
    const start = node.head;
    const t0 = performance.now();
    for (let b = 0; b < BLOCKS; b++) {
      const to = Array.from({ length: RECEIVERS_PER_BLOCK }, (_, i) => receivers[(b * RECEIVERS_PER_BLOCK + i) % receivers.length]);
      to.push(randomTron());
      node.submit(to.map((address) => ({ to: address, amount: 1_000_000n + BigInt(b) })));
      node.mine(1);
    }
    node.mine(2); // solidify the last one
    process.stdout.write(`Tron chain: ${BLOCKS} blocks with ${BLOCKS * (RECEIVERS_PER_BLOCK + 1)} USDT transfers made in ${ms(performance.now() - t0)}\n\n`);

    const scanOnce = async (label: string) => {
      await dbHandle.db.delete(transfers).where(eq(transfers.chainId, TRON_LOCAL_CHAIN_ID));
      await dbHandle.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, TRON_LOCAL_CHAIN_ID));
      await dbHandle.db.transaction((tx) => resetCheckpoint(tx, TRON_LOCAL_CHAIN_ID, { number: start.number, hash: start.hash, parentHash: start.parentHash, timestamp: Math.floor(start.timestamp / 1000) }));
      ctx.detection = new DetectionState();
      const http = new TronHttp(chain.chainId, chain.rpcUrls);
      const started = performance.now();
      const run = await scanChain(ctx, new TronAdapter(chain, http), 600_000);
      const elapsed = performance.now() - started;
      const [{ n }] = await dbHandle.db.select({ n: sql<number>`count(*)::int` }).from(transfers).where(eq(transfers.chainId, TRON_LOCAL_CHAIN_ID));
      const [{ pool }] = await dbHandle.db.select({ pool: sql<number>`count(*)::int` }).from(poolAddresses);
      process.stdout.write(`  ${label.padEnd(26)} pool ${String(pool).padStart(6)}  ranges ${run.ranges}  HTTP calls ${http.calls}  transfers ${n}  scan ${ms(elapsed)}\n`);
      if (n !== BLOCKS * RECEIVERS_PER_BLOCK) throw new Error(`expected ${BLOCKS * RECEIVERS_PER_BLOCK} transfers, recorded ${n}`);
      return { calls: http.calls, elapsed };
    };

    process.stdout.write(`1) Scanning ${BLOCKS} Tron blocks:\n`);
    await scanOnce('warm-up (not counted)');
    const small = await scanOnce('100 pool addresses');
    const extra = 100_000 - receivers.length;
    await insertPool(ctx, organizationId, 'tron', Array.from({ length: extra }, randomTron));
    await dbHandle.sql`analyze pool_addresses`;
    const large = await scanOnce('100,000 pool addresses');
    process.stdout.write(`  ratio 100,000 / 100: HTTP calls ${(large.calls / small.calls).toFixed(2)}, scan time ${(large.elapsed / small.elapsed).toFixed(2)}  (target ≤ 1.1)\n\n`);

    process.stdout.write(`2) Catch-up of ${CATCH_UP_BLOCKS} solidified blocks mined at once:\n`);
    {
      const head = node.head;
      await dbHandle.db.transaction((tx) => resetCheckpoint(tx, TRON_LOCAL_CHAIN_ID, { number: head.number, hash: head.hash, parentHash: head.parentHash, timestamp: Math.floor(head.timestamp / 1000) }));
      for (let b = 0; b < CATCH_UP_BLOCKS; b += 10) {
        node.submit([{ to: receivers[b % receivers.length], amount: 7n }, { to: randomTron(), amount: 7n }]);
        node.mine(Math.min(10, CATCH_UP_BLOCKS - b));
      }
      node.mine(2);
      ctx.detection = new DetectionState();
      const http = new TronHttp(chain.chainId, chain.rpcUrls);
      const started = performance.now();
      const { adapter, times } = timedAdapter(new TronAdapter(chain, http));
      const run = await scanChain(ctx, adapter, 600_000);
      const elapsed = performance.now() - started;
      process.stdout.write(
        `  caught up ${CATCH_UP_BLOCKS} blocks (${run.recorded} transfers) in ${ms(elapsed)} = ${((CATCH_UP_BLOCKS / elapsed) * 1000).toFixed(0)} blocks/s ` +
          `with ${http.calls} HTTP calls in ${run.ranges} ranges  (target < ${ms(CATCH_UP_TARGET_MS)})\n` +
          reportTimes(times, elapsed) +
          '\n',
      );
    }

    process.stdout.write(`3) Latency from solidification to order.completed, workers polling every ${config.intervals.chainScanMs} ms (scan) / ${config.intervals.confirmationsMs} ms (confirmations):\n`);
    await dbHandle.db.update(poolAddresses).set({ status: 'available' });
    workers = await startWorkerProcess(ctx);
    const latencies: number[] = [];
    for (let i = 0; i < LATENCY_ORDERS; i++) {
      const order = await createOrder(ctx, organizationId, { orderReference: `bench-${i}-${Date.now()}`, amount: '1', currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID });
      node.submit([{ to: order.address, amount: 1_000_000n }]);
      node.mine(1);
      await sleep(300 + Math.random() * 700);
      node.mine(1);
      await sleep(300 + Math.random() * 700);
      node.mine(1); // solidifies the payment's block (lag 2): latency from here
      latencies.push(await completionLatency(ctx, order.id, Date.now()));
    }
    process.stdout.write(reportLatencies(latencies, config.intervals.confirmationsMs));
  } finally {
    await workers?.close().catch(() => {});
    await node.stop();
    await dbHandle.close();
    await store.drop(config.redisUrl, redisPrefix);
  }
}

runScanBench('tron', main);
