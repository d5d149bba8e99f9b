/**
 * `npm run bench:scan`: the EVM scanner against a real local chain (anvil), Postgres and Redis.
 * Prints:
 *  1. for 1,000 blocks with token transfers: RPC calls and scan time with 100 and with 100,000
 *     pool addresses, BENCH_SCAN_ROUNDS (3) rounds of each, alternating (target: ratio ≤ 1.1 —
 *     matching costs one query per range whatever the pool);
 *  2. catch-up time for BENCH_CATCH_UP_BLOCKS (default 1,200) blocks missed while the scanner was
 *     down, a transfer every 10 blocks (target < 10 s for 1,200; < 30 s for 100,000, a day of
 *     downtime on a 1-second chain: BENCH_CATCH_UP_BLOCKS=100000 npm run bench:scan);
 *  3. detection latency from the block that brings the last required confirmation to the
 *     order.completed event row, with the real workers polling (target p50 < 1 s beyond the poll
 *     interval).
 * Uses its own database (dropped at the end) and Redis prefix. Not a timed test.
 */
import { performance } from 'node:perf_hooks';
import { Contract } from 'ethers';
import { ChainRegistry } from '../../core/chains/registry';
import { EvmRpc } from '../../core/chains/evm/evm-rpc';
import { EvmAdapter } from '../../core/chains/evm/evm-adapter';
import { resetCheckpoint } from '../../core/detection/scan-position';
import { scanChain } from '../../core/detection/scan';
import { DetectionState } from '../../core/service/detection-state';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { TEST_TOKEN_ABI, TEST_TOKENS } from '../../scripts/local-chain/test-tokens';
import { loadConfig } from '../../core/platform/config';
import { createOrder } from '../../core/orders/orders';
import { createOrganization } from '../../core/organizations/organizations';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { poolAddresses } from '../../db/schema';
import { startWorkerProcess } from '../../workers/runtime';
import { benchContext, benchStore, completionLatency, insertPool, ms, reportLatencies, reportTimes, sleep, timedAdapter, runScanBench } from './scan-support';
import { ETHEREUM_LOCAL_SPEC, latestBlock, mine, mineTransferBlocks, randomEvmAddress, scanWithPoolSizes, sendMintMany, startBenchChain } from './scan-evm-chains';

const BLOCKS = 1000;
const RECEIVERS_PER_BLOCK = 5;
const CATCH_UP_BLOCKS = Number(process.env.BENCH_CATCH_UP_BLOCKS ?? 1200);
/** Pro rata of 30 s for 100,000 blocks (a day of a 1-second chain), never under the 10 s of 1,200. */
const CATCH_UP_TARGET_MS = Math.max(10_000, (CATCH_UP_BLOCKS / 100_000) * 30_000);
const LATENCY_ORDERS = 10;

const store = benchStore('scan');
const { dbUrl, redisPrefix } = store;

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, DATABASE_URL: dbUrl, REDIS_PREFIX: redisPrefix, NETWORK: 'local', LOG_LEVEL: 'warn' });
  await runMigrations(dbUrl);
  const dbHandle = createDb(dbUrl, { max: 10 });
  const node = await startBenchChain({ chainId: LOCAL_CHAIN_ID, ...ETHEREUM_LOCAL_SPEC });
  const { provider, tokens } = node;
  let workers: Awaited<ReturnType<typeof startWorkerProcess>> | null = null;
  try {
    // This family only: the workers of the latency part would otherwise also poll tron-local and solana-local,
    // which this benchmark does not run, and their failing jobs hold the queues' workers.
    const registry = ChainRegistry.forNetwork('local', ['evm']);
    for (const t of TEST_TOKENS) registry.setTokenAddress(LOCAL_CHAIN_ID, t.currency, tokens[t.currency], t.decimals);
    registry.setRpcUrls(LOCAL_CHAIN_ID, [node.anvil.url]);
    const ctx = benchContext(config, dbHandle.db, registry);
    const chain = registry.get(LOCAL_CHAIN_ID)!;
    const { organizationId } = await createOrganization(dbHandle.db, 'Bench org');

    // The 100 receiving pool addresses (the pool of the first run).
    const receivers = Array.from({ length: 100 }, randomEvmAddress);
    await insertPool(ctx, organizationId, 'evm', receivers);

    // Addresses outside the pool, one per block here and cycled by the catch-up: anvil 1.7.1's cost
    // per mined block grows with its state, and 10,000 new holders made 100,000 blocks take 11
    // minutes instead of 3.
    const outsiders = Array.from({ length: BLOCKS }, randomEvmAddress);

    // 1,000 blocks, each with one transaction emitting 5 transfers to pool addresses and 1 elsewhere.
    const t0 = performance.now();
    const startBlock = await mineTransferBlocks(node, BLOCKS, receivers, outsiders, RECEIVERS_PER_BLOCK);
    const endBlock = (await latestBlock(node)).number;
    process.stdout.write(`Chain: ${BLOCKS} blocks with ${BLOCKS * (RECEIVERS_PER_BLOCK + 1)} token transfers (USDT, USDC, DAI in turn) mined in ${ms(performance.now() - t0)}\n\n`);

    process.stdout.write(`1) Scanning ${BLOCKS} blocks (${startBlock.number + 1}…${endBlock}):\n`);
    await scanWithPoolSizes(ctx, organizationId, [{ chain, from: startBlock }], BLOCKS * RECEIVERS_PER_BLOCK, receivers.length);
    process.stdout.write('\n');

    // 2) Catch-up: the scanner was down while 1,200 blocks were mined (with transfers in some).
    process.stdout.write(`2) Catch-up after ${CATCH_UP_BLOCKS} missed blocks:\n`);
    {
      const head = await latestBlock(node);
      await dbHandle.db.transaction((tx) => resetCheckpoint(tx, LOCAL_CHAIN_ID, head));
      // Every 10 blocks: one transaction sent as is (no fee or gas look-ups), then one anvil_mine
      // of 10 blocks, the first of which takes it: two calls per 10 blocks.
      const made = performance.now();
      for (let b = 0; b < CATCH_UP_BLOCKS; b += 10) {
        await sendMintMany(node, 'USDT', [receivers[(b / 10) % receivers.length], outsiders[(b / 10) % outsiders.length]], 7n);
        await mine(node, Math.min(10, CATCH_UP_BLOCKS - b));
      }
      process.stdout.write(`  (${CATCH_UP_BLOCKS} blocks with ${Math.ceil(CATCH_UP_BLOCKS / 10)} transfers to pool addresses mined in ${ms(performance.now() - made)})\n`);
      ctx.detection = new DetectionState();
      const rpc = new EvmRpc(chain);
      const started = performance.now();
      const { adapter, times } = timedAdapter(new EvmAdapter(chain, rpc));
      const run = await scanChain(ctx, adapter, 600_000);
      const elapsed = performance.now() - started;
      rpc.destroy();
      // Every transaction pays one pool address: a catch-up that read fewer logs did not catch up.
      if (run.recorded !== Math.ceil(CATCH_UP_BLOCKS / 10)) throw new Error(`catch-up recorded ${run.recorded} transfers, expected ${Math.ceil(CATCH_UP_BLOCKS / 10)}`);
      process.stdout.write(
        `  caught up ${CATCH_UP_BLOCKS} blocks (${run.recorded} transfers) in ${ms(elapsed)} = ${((CATCH_UP_BLOCKS / elapsed) * 1000).toFixed(0)} blocks/s ` +
          `with ${rpc.calls} RPC calls in ${run.ranges} ranges  (target < ${ms(CATCH_UP_TARGET_MS)})\n` +
          reportTimes(times, elapsed) +
          '\n',
      );
    }

    // 3) Detection latency with the real job tier polling at the configured intervals.
    process.stdout.write(`3) Detection latency, workers polling every ${config.intervals.chainScanMs} ms (scan) / ${config.intervals.confirmationsMs} ms (confirmations):\n`);
    workers = await startWorkerProcess(ctx);
    const payer = await provider.getSigner((await provider.send('eth_accounts', []))[1]);
    const payerToken = new Contract(tokens.USDT, TEST_TOKEN_ABI, payer);
    let payerNonce = await provider.getTransactionCount(await payer.getAddress(), 'pending');
    const latencies: number[] = [];
    await dbHandle.db.update(poolAddresses).set({ status: 'available' });
    for (let i = 0; i < LATENCY_ORDERS; i++) {
      const order = await createOrder(ctx, organizationId, { orderReference: `bench-${i}-${Date.now()}`, amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
      await payerToken.mint(order.address, 1_000_000n, { nonce: payerNonce++, gasLimit: 200_000 });
      await mine(node);
      await sleep(300 + Math.random() * 700);
      await mine(node);
      await sleep(300 + Math.random() * 700);
      // The confirming block (3rd confirmation): latency from here.
      await mine(node);
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

runScanBench('evm', main);
