/**
 * End-to-end latency: the confirming block mined → the merchant's webhook received.
 * A local anvil with interval mining and automine off; this script mines every block itself
 * (evm_mine) and takes the wall time when that call returns. One payment per block at
 * BENCH_RATE payments/s (default 5), BENCH_PAYMENTS per run (default 200); worker processes
 * (`workers/main.ts`) and the receiver (e2e-receiver.cjs) are separate processes. Runs with 1 and
 * 2 workers, with new heads over WebSocket and polling only; prints one table.
 *
 *   npm run bench:e2e
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { getAddress, hexlify, JsonRpcProvider, Network, Contract } from 'ethers';
import { randomBytes } from 'node:crypto';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { systemClock } from '../../core/platform/clock';
import { loadConfig } from '../../core/platform/config';
import type { ServiceContext } from '../../core/service/context';
import { DetectionState } from '../../core/service/detection-state';
import { newProcessMemory } from '../../core/service/process-memory';
import { resetCheckpoint } from '../../core/detection/scan-position';
import { lazyJobQueue } from '../../core/jobs/bullmq-job-queue';
import { createLogger } from '../../core/platform/logger';
import { createOrder } from '../../core/orders/orders';
import { createOrganization } from '../../core/organizations/organizations';
import { createWebhookEndpoint } from '../../core/webhooks/endpoints';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { startAnvil } from '../local-chain/anvil';
import { deployTestTokens, TEST_TOKEN_ABI, TEST_TOKENS } from '../local-chain/test-tokens';
import { benchStore, insertPool, sleep } from './scan-support';
import { runBench, percentile } from './bench-kit';

const ROOT = path.resolve(__dirname, '../..');
const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 200);
const RATE = Number(process.env.BENCH_RATE ?? 5);
const POLL_MS = 1000;
const store = benchStore('e2e');

interface Proc {
  child: ChildProcess;
  out: () => string;
  lines: (fn: (line: string) => void) => void;
}

function spawnProc(cmd: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(cmd, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  const listeners: ((line: string) => void)[] = [];
  let partial = '';
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
    partial += c.toString();
    const lines = partial.split('\n');
    partial = lines.pop()!;
    for (const l of lines) for (const fn of listeners) fn(l);
  });
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  return { child, out: () => out, lines: (fn) => listeners.push(fn) };
}

async function waitFor(p: Proc, pattern: RegExp, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const m = pattern.exec(p.out());
    if (m) return m[0];
    if (p.child.exitCode !== null) break;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${pattern}: ${p.out()}`);
}

async function stop(p: Proc): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.child.once('exit', () => r()));
  try {
    process.kill(-p.child.pid!, 'SIGTERM');
  } catch {
    return;
  }
  await Promise.race([exited, sleep(10_000)]);
  try {
    process.kill(-p.child.pid!, 'SIGKILL');
  } catch {
    // gone
  }
}

const pct = percentile;

async function main(): Promise<void> {
  const { dbUrl, redisPrefix } = store;
  const config = loadConfig({ ...process.env, DATABASE_URL: dbUrl, REDIS_PREFIX: redisPrefix, NETWORK: 'local', LOG_LEVEL: 'warn', WEBHOOK_ALLOW_INSECURE: 'true' });
  await runMigrations(dbUrl);
  const dbHandle = createDb(dbUrl, { max: 5 });
  const anvil = await startAnvil({ port: 0 });
  const network = Network.from(31337);
  const provider = new JsonRpcProvider(anvil.url, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1 });
  const receiver = spawnProc(process.execPath, [path.join(__dirname, 'e2e-receiver.cjs')], {});
  const rows: string[] = [];
  try {
    const registry = ChainRegistry.forNetwork('local', SCANNED_FAMILIES);
    const accounts: string[] = await provider.send('eth_accounts', []);
    const tokens = await deployTestTokens(await provider.getSigner(accounts[0]));
    for (const t of TEST_TOKENS) registry.setTokenAddress(LOCAL_CHAIN_ID, t.currency, tokens[t.currency], t.decimals);
    registry.setRpcUrls(LOCAL_CHAIN_ID, [anvil.url]);
    await provider.send('evm_setAutomine', [false]);
    await provider.send('evm_setIntervalMining', [0]);
    const confirmations = registry.get(LOCAL_CHAIN_ID)!.orderConfirmations;
    const ctx: ServiceContext = { config, db: dbHandle.db, registry, clock: systemClock, logger: createLogger('warn'), jobs: lazyJobQueue(config.redisUrl, config.redisPrefix), detection: new DetectionState(), memory: newProcessMemory(config) };
    const { organizationId, ownerKey } = await createOrganization(dbHandle.db, 'Bench org');
    await insertPool(ctx, organizationId, 'evm', Array.from({ length: PAYMENTS * 4 + 10 }, () => getAddress(hexlify(randomBytes(20)))));
    const port = Number((await waitFor(receiver, /port \d+/)).split(' ')[1]);
    await createWebhookEndpoint({ db: dbHandle.db, config, clock: systemClock }, { organizationId, keyId: ownerKey.id, role: 'owner' }, { url: `http://127.0.0.1:${port}/hook`, events: ['order.completed'] });
    const receipts = new Map<string, number>();
    let duplicates = 0;
    receiver.lines((line) => {
      const [at, orderId] = line.split(' ');
      if (!orderId?.startsWith('ord_')) return;
      if (receipts.has(orderId)) duplicates++;
      else receipts.set(orderId, Number(at));
    });
    const payer = await provider.getSigner(accounts[1]);
    const token = new Contract(tokens.USDT, TEST_TOKEN_ABI, payer);
    let nonce = await provider.getTransactionCount(accounts[1], 'pending');

    console.log(`bench:e2e: ${PAYMENTS} payments per run at ${RATE}/s, one payment per block, ${confirmations} confirmations, polling every ${POLL_MS} ms; machine load shared with other processes`);
    for (const ws of [true, false]) {
      for (const count of [1, 2]) {
        const head = await provider.send('eth_getBlockByNumber', ['latest', false]);
        await dbHandle.db.transaction((tx) => resetCheckpoint(tx, LOCAL_CHAIN_ID, { number: Number(head.number), hash: head.hash, parentHash: head.parentHash, timestamp: Number(head.timestamp) }));
        const env = {
          DATABASE_URL: dbUrl,
          REDIS_URL: config.redisUrl,
          REDIS_PREFIX: redisPrefix,
          NETWORK: 'local',
          LOG_LEVEL: 'info',
          METRICS_PORT: '0',
          WEBHOOK_ALLOW_INSECURE: 'true',
          WORKER_QUEUES: 'chain-scan,chain-confirmations,webhook-relay,webhook-delivery',
          CHAIN_SCAN_INTERVAL_MS: String(POLL_MS),
          CONFIRMATIONS_INTERVAL_MS: String(POLL_MS),
          RPC_URLS_ETHEREUM_LOCAL: anvil.url,
          RPC_WS_URLS_ETHEREUM_LOCAL: ws ? anvil.url.replace(/^http/, 'ws') : 'off',
          TOKEN_ETHEREUM_LOCAL_USDT: tokens.USDT,
          TOKEN_ETHEREUM_LOCAL_USDC: tokens.USDC,
          TOKEN_ETHEREUM_LOCAL_DAI: tokens.DAI,
        };
        const workers = Array.from({ length: count }, () => spawnProc(path.join(ROOT, 'node_modules/.bin/tsx'), ['workers/main.ts'], env));
        await Promise.all(workers.map((w) => waitFor(w, /workers started/)));
        if (ws) await Promise.all(workers.map((w) => waitFor(w, /head subscription connected/, 20_000)));
        await sleep(1500);

        // Block k carries payment k and confirms payment k - confirmations + 1.
        const mined = new Map<number, number>();
        const orders: { id: string; confirmingBlock: number }[] = [];
        const interval = 1000 / RATE;
        const t0 = Date.now();
        for (let k = 0; k < PAYMENTS + confirmations - 1; k++) {
          if (k < PAYMENTS) {
            const order = await createOrder(ctx, organizationId, { orderReference: `e2e-${ws}-${count}-${k}-${Date.now()}`, amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
            await token.mint(order.address, 1_000_000n, { nonce: nonce++, gasLimit: 200_000 });
            orders.push({ id: order.id, confirmingBlock: 0 });
          }
          await provider.send('evm_mine', []);
          const at = Date.now();
          const height = Number(await provider.send('eth_blockNumber', []));
          mined.set(height, at);
          if (k < PAYMENTS) orders[k].confirmingBlock = height + confirmations - 1;
          const next = t0 + (k + 1) * interval;
          if (next > Date.now()) await sleep(next - Date.now());
        }
        const deadline = Date.now() + 60_000;
        while (orders.some((o) => !receipts.has(o.id)) && Date.now() < deadline) await sleep(50);
        const latencies = orders.filter((o) => receipts.has(o.id)).map((o) => receipts.get(o.id)! - mined.get(o.confirmingBlock)!).sort((a, b) => a - b);
        const missing = orders.length - latencies.length;
        rows.push(
          `| ${ws ? 'on ' : 'off'} | ${count} | ${latencies.length}${missing ? ` (${missing} missing)` : ''} | ${pct(latencies, 50)} | ${pct(latencies, 90)} | ${pct(latencies, 99)} | ${latencies.at(-1)} | ${duplicates} |`,
        );
        console.log(rows.at(-1));
        for (const w of workers) await stop(w);
      }
    }
    console.log('\n| WebSockets | workers | payments | p50 ms | p90 ms | p99 ms | max ms | duplicate POSTs |\n| --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const r of rows) console.log(r);
    console.log(`\ntargets: with WebSockets p50 < 250 ms, p99 < 1000 ms; polling only p50 < ${POLL_MS + 300} ms`);
  } finally {
    await stop(receiver);
    provider.destroy();
    await anvil.stop();
    await dbHandle.close();
    await store.drop(config.redisUrl, redisPrefix);
  }
}

runBench(main);
