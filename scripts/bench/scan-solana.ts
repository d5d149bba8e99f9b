/**
 * `npm run bench:scan` (Solana part): the Solana adapter on the detection core against
 * solana-local, real Postgres and Redis. Prints:
 *  1. `blocks` mode: RPC calls and scan time over the same slots with 100 and with 100,000 Solana
 *     pool addresses (target: ratio ≤ 1.1);
 *  2. catch-up in `blocks` mode after BENCH_CATCH_UP_BLOCKS (default 1,200) missed slots, a payment
 *     every 10 slots: RPC calls and time (target < 30 s for 100,000, issue 31:
 *     BENCH_CATCH_UP_BLOCKS=100000 npx tsx scripts/bench/scan-solana.ts);
 *  3. `addresses` mode: RPC calls per scan tick and per minute (one tick a second, one slot every
 *     400 ms) with 10, 100 and 1,000 active addresses, so an operator can size a provider plan;
 *  4. latency from the slot that finalizes a payment to its order.completed row, with the real
 *     workers polling, solana-local producing a slot every 400 ms.
 * Uses its own database (dropped at the end), Redis prefix and an in-memory solana-local. Not a timed test.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { eq, inArray, sql } from 'drizzle-orm';
import { generateKeyPairSigner, getBase58Decoder } from '@solana/kit';
import { ChainRegistry } from '../../core/chains/registry';
import { SolanaAdapter } from '../../core/chains/solana/solana-adapter';
import { SolanaRpcClient } from '../../core/chains/solana/solana-rpc';
import { applySolanaLocalState, SOLANA_LOCAL_CHAIN_ID } from '../../core/chains/solana/solana-local-state';
import { resetCheckpoint } from '../../core/detection/scan-position';
import { scanChain } from '../../core/detection/scan';
import { DetectionState } from '../../core/service/detection-state';
import { loadConfig } from '../../core/platform/config';
import { createOrder } from '../../core/orders/orders';
import { createOrganization } from '../../core/organizations/organizations';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { chainHeadObservations, poolAddresses, scannedBlocks, transfers } from '../../db/schema';
import { startWorkerProcess } from '../../workers/runtime';
import { startSolanaLocal, type RunningSolanaLocal } from '../local-chain/solana/solana-local';
import { SolanaLocalClient } from '../local-chain/solana/payer';
import { solanaLocalStateOf } from '../local-chain/solana/solana-local-chain';
import { benchContext, benchStore, completionLatency, insertPool, ms, reportLatencies, reportTimes, sleep, timedAdapter, runScanBench } from './scan-support';
import { percentile } from './bench-kit';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWebhookEndpoint } from '../../core/webhooks/endpoints';
import { operatorCallerFor } from '../../core/organizations/operator';

const BLOCKS = 300;
const PAYMENTS_PER_BLOCK = 2;
const TICKS = 5;
const LATENCY_ORDERS = 6;
const CATCH_UP_BLOCKS = Number(process.env.BENCH_CATCH_UP_BLOCKS ?? 1200);
/** Pro rata of 30 s for 100,000 slots, never under 10 s. */
const CATCH_UP_TARGET_MS = Math.max(10_000, (CATCH_UP_BLOCKS / 100_000) * 30_000);
/** A public endpoint's budget (mainnet-beta: about 100 requests per 10 s per IP). */
const PUBLIC_CALLS_PER_MINUTE = 600;

const store = benchStore('solana');
const { dbUrl, redisPrefix } = store;
const randomOwner = async () => (await generateKeyPairSigner()).address as string;
const owners = (n: number) => Promise.all(Array.from({ length: n }, randomOwner));

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, DATABASE_URL: dbUrl, REDIS_PREFIX: redisPrefix, NETWORK: 'local', LOG_LEVEL: 'warn', WEBHOOK_ALLOW_INSECURE: 'true' });
  await runMigrations(dbUrl);
  const dbHandle = createDb(dbUrl, { max: 10 });
  let chain: RunningSolanaLocal | null = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 0 });
  let workers: Awaited<ReturnType<typeof startWorkerProcess>> | null = null;
  let receiver: http.Server | null = null;
  try {
    // Solana only: the workers of part 4 would otherwise also poll ethereum-local and tron-local,
    // which this benchmark does not run, and their failing jobs hold the queues' workers.
    const registry = ChainRegistry.forNetwork('local', ['solana']);
    const useChain = (c: RunningSolanaLocal) => applySolanaLocalState(registry, solanaLocalStateOf(c));
    useChain(chain);
    const ctx = benchContext(config, dbHandle.db, registry);
    const sol = registry.get(SOLANA_LOCAL_CHAIN_ID)!;
    const client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    const { organizationId } = await createOrganization(dbHandle.db, 'Bench org');
    const receivers = await owners(100);
    await insertPool(ctx, organizationId, 'solana', receivers);

    // 300 blocks, each with 2 USDC payments to pool addresses and 1 elsewhere; a skipped slot every 10 blocks.
    const startSlot = Number(await client.rpc.getSlot({ commitment: 'confirmed' }).send());
    const t0 = performance.now();
    for (let b = 0; b < BLOCKS; b++) {
      for (let i = 0; i < PAYMENTS_PER_BLOCK; i++) await client.pay(receivers[(b * PAYMENTS_PER_BLOCK + i) % receivers.length], 1_000_000n + BigInt(b), 'USDC', { waitFor: 'none' });
      await client.pay(await randomOwner(), 5n, 'USDC', { waitFor: 'none' });
      await client.dev('solanaLocal_produceSlot', { count: 1 });
      if (b % 10 === 9) await client.dev('solanaLocal_skipSlots', { count: 1 });
    }
    await client.dev('solanaLocal_produceSlot', { count: 2 });
    const startBlock = await new SolanaAdapter(sol, new SolanaRpcClient(sol.chainId, sol.rpcUrls)).blockAt(startSlot);
    process.stdout.write(`Solana chain: ${BLOCKS} blocks with ${BLOCKS * (PAYMENTS_PER_BLOCK + 1)} USDC payments made in ${ms(performance.now() - t0)}\n\n`);

    const scanOnce = async (label: string) => {
      await dbHandle.db.delete(transfers).where(eq(transfers.chainId, SOLANA_LOCAL_CHAIN_ID));
      await dbHandle.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
      await dbHandle.db.transaction((tx) => resetCheckpoint(tx, SOLANA_LOCAL_CHAIN_ID, startBlock!));
      ctx.detection = new DetectionState();
      const rpc = new SolanaRpcClient(sol.chainId, sol.rpcUrls);
      const started = performance.now();
      const run = await scanChain(ctx, new SolanaAdapter({ ...sol, solanaScanMode: 'blocks' }, rpc), 600_000);
      const elapsed = performance.now() - started;
      const [{ n }] = await dbHandle.db.select({ n: sql<number>`count(*)::int` }).from(transfers).where(eq(transfers.chainId, SOLANA_LOCAL_CHAIN_ID));
      const [{ pool }] = await dbHandle.db.select({ pool: sql<number>`count(*)::int` }).from(poolAddresses);
      process.stdout.write(`  ${label.padEnd(26)} pool ${String(pool).padStart(6)}  ranges ${run.ranges}  RPC calls ${rpc.calls}  transfers ${n}  scan ${ms(elapsed)}\n`);
      if (n !== BLOCKS * PAYMENTS_PER_BLOCK) throw new Error(`expected ${BLOCKS * PAYMENTS_PER_BLOCK} transfers, recorded ${n}`);
      return { calls: rpc.calls, elapsed };
    };

    process.stdout.write(`1) blocks mode, scanning ${BLOCKS} Solana blocks:\n`);
    await scanOnce('warm-up (not counted)');
    const small = await scanOnce('100 pool addresses');
    // 99,900 more addresses (random 32-byte keys: key pairs would take minutes to make).
    const b58 = getBase58Decoder();
    await insertPool(ctx, organizationId, 'solana', Array.from({ length: 100_000 - receivers.length }, () => b58.decode(randomBytes(32))));
    await dbHandle.sql`analyze pool_addresses`;
    const large = await scanOnce('100,000 pool addresses');
    process.stdout.write(`  ratio 100,000 / 100: RPC calls ${(large.calls / small.calls).toFixed(2)}, scan time ${(large.elapsed / small.elapsed).toFixed(2)}  (target ≤ 1.1)\n\n`);

    process.stdout.write(`2) Catch-up in blocks mode after ${CATCH_UP_BLOCKS.toLocaleString('en')} missed slots, a payment every 10 slots:\n`);
    {
      const head = await new SolanaAdapter(sol, new SolanaRpcClient(sol.chainId, sol.rpcUrls)).head();
      await dbHandle.db.transaction((tx) => resetCheckpoint(tx, SOLANA_LOCAL_CHAIN_ID, head));
      const made = performance.now();
      let payments = 0;
      for (let b = 0; b < CATCH_UP_BLOCKS; b += 10) {
        await client.pay(receivers[(b / 10) % receivers.length], 7n, 'USDC', { waitFor: 'none' });
        payments++;
        await client.dev('solanaLocal_produceSlot', { count: Math.min(10, CATCH_UP_BLOCKS - b) });
      }
      await client.dev('solanaLocal_produceSlot', { count: 2 });
      process.stdout.write(`  (${CATCH_UP_BLOCKS.toLocaleString('en')} slots with ${payments.toLocaleString('en')} payments made in ${ms(performance.now() - made)})\n`);
      ctx.detection = new DetectionState();
      const rpc = new SolanaRpcClient(sol.chainId, sol.rpcUrls);
      const started = performance.now();
      const { adapter, times } = timedAdapter(new SolanaAdapter({ ...sol, solanaScanMode: 'blocks' }, rpc));
      const run = await scanChain(ctx, adapter, 600_000);
      const elapsed = performance.now() - started;
      if (run.lastStatus !== 'idle') throw new Error(`catch-up stopped with status ${run.lastStatus}`);
      process.stdout.write(
        `  caught up ${CATCH_UP_BLOCKS.toLocaleString('en')} slots (${run.recorded} transfers) in ${ms(elapsed)} = ${((CATCH_UP_BLOCKS / elapsed) * 1000).toFixed(0)} slots/s ` +
          `with ${rpc.calls.toLocaleString('en')} RPC calls (${rpc.httpRequests.toLocaleString('en')} HTTP requests) in ${run.ranges} ranges  (target < ${ms(CATCH_UP_TARGET_MS)})\n` +
          reportTimes(times, elapsed) +
          '\n',
      );
      if (run.recorded !== payments) throw new Error(`expected ${payments} transfers, recorded ${run.recorded}`);
    }

    process.stdout.write(`3) addresses mode: RPC calls per scan tick (one tick a second, 2-3 slots a tick, one payment to an active address a tick):\n`);
    const perTickByActive: [number, number][] = [];
    for (const active of [10, 100, 1000]) {
      await dbHandle.db.update(poolAddresses).set({ status: 'available' });
      const picked = (await dbHandle.db.select({ address: poolAddresses.address }).from(poolAddresses).limit(active)).map((r) => r.address);
      await dbHandle.db.update(poolAddresses).set({ status: 'allocated' }).where(inArray(poolAddresses.address, picked));
      const head = await new SolanaAdapter(sol, new SolanaRpcClient(sol.chainId, sol.rpcUrls)).head();
      await dbHandle.db.transaction((tx) => resetCheckpoint(tx, SOLANA_LOCAL_CHAIN_ID, head));
      ctx.detection = new DetectionState();
      const rpc = new SolanaRpcClient(sol.chainId, sol.rpcUrls);
      const adapter = new SolanaAdapter({ ...sol, solanaScanMode: 'addresses' }, rpc);
      await scanChain(ctx, adapter, 600_000); // first tick: cursors start (not counted)
      const before = rpc.calls;
      const started = performance.now();
      for (let t = 0; t < TICKS; t++) {
        await client.pay(picked[t % picked.length], 1_000_000n, 'USDC', { waitFor: 'none' });
        await client.dev('solanaLocal_produceSlot', { count: t % 2 === 0 ? 3 : 2 });
        await scanChain(ctx, adapter, 600_000);
      }
      const perTick = (rpc.calls - before) / TICKS;
      perTickByActive.push([active, perTick]);
      process.stdout.write(
        `  ${String(active).padStart(5)} active addresses (${active * 2} token accounts): ${perTick.toFixed(1)} RPC calls per tick → ${Math.round(perTick * 60).toLocaleString('en')} per minute; a tick takes ${ms((performance.now() - started) / TICKS)} here\n`,
      );
    }
    {
      // Calls per tick = fixed + perAddress × active addresses (from the 10 and 1,000 points).
      const [[a0, c0], , [a1, c1]] = perTickByActive;
      const perAddress = (c1 - c0) / (a1 - a0);
      const fixed = c0 - perAddress * a0;
      const fitsAt = (tickSeconds: number) => Math.max(0, Math.floor(((PUBLIC_CALLS_PER_MINUTE / 60) * tickSeconds - fixed) / perAddress));
      process.stdout.write(
        `  sizing: RPC calls per tick ≈ ${fixed.toFixed(1)} + ${perAddress.toFixed(2)} × active addresses; per minute at one tick a second ≈ ${Math.round(fixed * 60)} + ${Math.round(perAddress * 60)} × active addresses\n` +
          `  a public endpoint (about ${PUBLIC_CALLS_PER_MINUTE} requests per minute per IP) carries ${fitsAt(1)} active addresses at one tick a second, ${fitsAt(10)} at one tick every 10 s: beyond that, a provider plan of the per-minute figure above, or blocks mode\n\n`,
      );
    }

    process.stdout.write(`4) Latency from the slot that finalizes a payment to order.completed, solana-local producing a slot every 400 ms (finalized 32 blocks behind), workers polling every ${config.intervals.chainScanMs} ms (scan) / ${config.intervals.confirmationsMs} ms (confirmations):\n`);
    await chain.stop();
    chain = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 400 });
    useChain(chain);
    const timed = new SolanaLocalClient(chain.url, chain.wallet, chain.info);
    // A new chain: its slots start again from 0, so the old chain's remembered blocks (up to the
    // catch-up's slots) would look like a reorg of every new block, and its head observations
    // would say every new slot was seen before the orders began (no order would ever be paid).
    await dbHandle.db.delete(transfers).where(eq(transfers.chainId, SOLANA_LOCAL_CHAIN_ID));
    await dbHandle.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
    await dbHandle.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, SOLANA_LOCAL_CHAIN_ID));
    await dbHandle.db.update(poolAddresses).set({ status: 'available' });
    const head = await new SolanaAdapter(registry.get(SOLANA_LOCAL_CHAIN_ID)!, new SolanaRpcClient(sol.chainId, registry.get(SOLANA_LOCAL_CHAIN_ID)!.rpcUrls)).head();
    await dbHandle.db.transaction((tx) => resetCheckpoint(tx, SOLANA_LOCAL_CHAIN_ID, head));
    ctx.detection = new DetectionState();
    // The merchant's receiver: when each order.completed webhook arrives (the workers deliver it).
    const arrivals = new Map<string, number>();
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c)).on('end', () => {
        const at = Date.now();
        try {
          const event = JSON.parse(body);
          const orderId = event?.data?.orderId ?? event?.data?.order_id;
          if (event?.type === 'order.completed' && orderId && !arrivals.has(orderId)) arrivals.set(orderId, at);
        } catch {
          // not an event
        }
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    await createWebhookEndpoint(ctx, await operatorCallerFor(ctx.db, organizationId), { url: hookUrl, events: ['order.completed'] });
    workers = await startWorkerProcess(ctx);
    const latencies: number[] = [];
    const webhookLatencies: number[] = [];
    for (let i = 0; i < LATENCY_ORDERS; i++) {
      const order = await createOrder(ctx, organizationId, { orderReference: `bench-${i}-${Date.now()}`, amount: '1', currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID });
      const paid = await timed.pay(order.address, 1_000_000n, 'USDC', { waitFor: 'processed' });
      await timed.waitFor(paid.signature, 'finalized', 60_000); // polls every 25 ms: the finalizing slot is seen within that
      const finalizedSeenAt = Date.now();
      latencies.push(await completionLatency(ctx, order.id, finalizedSeenAt));
      const deadline = Date.now() + 30_000;
      while (!arrivals.has(order.id) && Date.now() < deadline) await sleep(10);
      if (!arrivals.has(order.id)) throw new Error(`order ${order.id}: no order.completed webhook within 30 s`);
      webhookLatencies.push(arrivals.get(order.id)! - finalizedSeenAt);
      await sleep(Math.random() * 400);
    }
    process.stdout.write(reportLatencies(latencies, config.intervals.confirmationsMs));
    const sorted = [...webhookLatencies].sort((a, b) => a - b);
    process.stdout.write(
      `  to the merchant's webhook (order.completed received): p50 ${percentile(sorted, 50)} ms, max ${sorted[sorted.length - 1]} ms over ${sorted.length} orders\n`,
    );
  } finally {
    await workers?.close().catch(() => {});
    receiver?.close();
    await chain?.stop();
    await dbHandle.close();
    await store.drop(config.redisUrl, redisPrefix);
  }
}

runScanBench('solana', main);
