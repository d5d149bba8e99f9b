import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { JsonRpcProvider, Network } from 'ethers';
import Redis from 'ioredis';
import { CHAIN_DEFINITIONS } from '../../core/chains/chains.data';
import { SOLANA_LOCAL_STATE_KEY } from '../../core/chains/solana/solana-local-state';
import { TRON_LOCAL_STATE_KEY, type TronLocalState } from '../../core/chains/tron/tron-local-state';
import { createOrganization } from '../../core/organizations/organizations';
import { setServiceState } from '../../core/platform/service-state';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { orders as ordersTable, poolAddresses } from '../../db/schema';
import { randomEvmAddress, randomSolanaAddress, randomTronAddress } from '../../test/helpers/addresses';
import { startTcpProxy } from '../../test/helpers/processes';
import { evmHistory, solanaHistory, tronHistory, type ChainHistory } from '../../test/sim/chain-history';
import { checkInvariants, type InvariantInput } from '../../test/sim/invariants';
import { Rng } from '../../test/sim/rng';
import { CURRENCIES_OF, DECIMALS, FAMILIES, type Currency, type Family } from '../../test/sim/scenario';
import { startRestartableRedis } from '../../test/sim/services';
import { startSimSolana } from '../../test/sim/solana-chain';
import { startSimTron } from '../../test/sim/tron-chain';
import type { ReceivedPost } from '../../test/sim/webhook-receiver';
import { startAnvil } from '../local-chain/anvil';
import { solanaLocalStateOf } from '../local-chain/solana/solana-local-chain';
import { deployTestTokens, TEST_TOKEN_ABI } from '../local-chain/test-tokens';
import {
  cleanupStack,
  freePort,
  numberOption,
  option,
  RequestTally,
  ROOT,
  scratchDatabase,
  sleep,
  spawnService,
  startConnectionCutter,
  throughProxy,
  timedRequest,
  type ProcessExit,
} from './chaos-kit';

/**
 * `npm run chaos:soak`: issue 37's soak. The service runs as `npm start` does (scripts/start.ts, API
 * and workers in one process) on its own database reached through a TCP proxy, a private
 * redis-server and local chains this script runs (anvil, tron-local, solana-local). At a steady rate
 * it creates orders, pays each in full on its chain and receives the webhooks on a local receiver
 * that checks their signatures; meanwhile the proxy resets the Postgres connections every few seconds
 * (RST or FIN at random) and the private Redis is shut down (SHUTDOWN NOSAVE: its data lost) and
 * started again on the same port. Then it waits for settlement, checks the simulation's invariants
 * (test/sim/invariants.ts) and prints the figures; it exits 1 when an invariant fails.
 *
 *   --minutes 10  --orders-per-minute 30  --cut-every-ms 4000  --redis-restarts 2  --redis-down-ms 3000
 *   --settle-seconds 300  --style b (API_STYLE a|b)  --receiver-fail-rate 0.05  --restart-on-exit true  --seed N
 * (or SOAK_MINUTES, SOAK_ORDERS_PER_MINUTE, SOAK_CUT_EVERY_MS, SOAK_REDIS_RESTARTS, SOAK_REDIS_DOWN_MS,
 *  SOAK_SETTLE_SECONDS, SOAK_STYLE, SOAK_RECEIVER_FAIL_RATE, SOAK_RESTART_ON_EXIT, SOAK_SEED)
 *
 * A process that exits is counted (with its stderr's last lines) and, unless --restart-on-exit false,
 * started again as a supervisor would, so the run still measures what the exit cost.
 */
const minutes = numberOption('minutes', 'SOAK_MINUTES', 10, 0.25, 24 * 60);
const ordersPerMinute = numberOption('orders-per-minute', 'SOAK_ORDERS_PER_MINUTE', 30, 1, 6000);
const cutEveryMs = numberOption('cut-every-ms', 'SOAK_CUT_EVERY_MS', 4000, 100, 600_000);
const redisRestarts = numberOption('redis-restarts', 'SOAK_REDIS_RESTARTS', 2, 0, 100);
const redisDownMs = numberOption('redis-down-ms', 'SOAK_REDIS_DOWN_MS', 3000, 0, 600_000);
const settleSeconds = numberOption('settle-seconds', 'SOAK_SETTLE_SECONDS', 300, 10, 24 * 3600);
const receiverFailRate = numberOption('receiver-fail-rate', 'SOAK_RECEIVER_FAIL_RATE', 0.05, 0, 0.9);
const style = option('style', 'SOAK_STYLE', 'b');
const restartOnExit = option('restart-on-exit', 'SOAK_RESTART_ON_EXIT', 'true') !== 'false';
const seed = numberOption('seed', 'SOAK_SEED', Date.now() % 1_000_000, 0, 2 ** 31);
const outDir = path.resolve(ROOT, option('out', 'SOAK_OUT', path.join('.data', 'chaos', `soak-${seed}`)));
if (style !== 'a' && style !== 'b') {
  process.stderr.write(`--style (SOAK_STYLE) is a or b, not "${style}"\n`);
  process.exit(2);
}

const CHAIN_OF: Record<Family, string> = { evm: 'ethereum-local', tron: 'tron-local', solana: 'solana-local' };
/** As the simulation runs them: tron-local solidifies 2 blocks behind its head, solana-local finalizes 6 behind. */
const TRON_SOLIDIFICATION_LAG = 2;
const SOLANA_FINALIZATION_LAG = 6;
const blockTimeOf = (chainId: string) => CHAIN_DEFINITIONS.find((c) => c.chainId === chainId)!.blockTimeMs;
/** A request without an answer after this long is hung. */
const ABORT_MS = 30_000;
const WEBHOOK_TIMEOUT_MS = 5_000;
/** How long a client keeps retrying one order's creation. */
const RETRY_FOR_MS = 90_000;

const log = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

interface SoakOrder {
  n: number;
  id: string;
  family: Family;
  currency: Currency;
  address: string;
  units: bigint;
  paid: boolean;
}

/** The merchant's receiver: checks each POST's X-Service-Signature against its endpoint's secret. */
async function startSigningReceiver(rng: Rng): Promise<{
  url: string;
  posts: ReceivedPost[];
  badSignatures: number;
  secrets: Map<string, string>;
  calm(): void;
  close(): Promise<void>;
}> {
  const state = { posts: [] as ReceivedPost[], badSignatures: 0, secrets: new Map<string, string>(), failRate: receiverFailRate };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const endpoint = req.url ?? '/';
      const secret = state.secrets.get(endpoint);
      const given = Buffer.from(String(req.headers['x-service-signature'] ?? ''), 'utf8');
      const expected = Buffer.from(secret ? createHmac('sha256', secret).update(raw).digest('hex') : '', 'utf8');
      if (!secret || given.length !== expected.length || !timingSafeEqual(given, expected)) {
        state.badSignatures++;
        res.writeHead(401).end();
        return;
      }
      const body = JSON.parse(raw.toString('utf8')) as { id?: string; type?: string };
      const fail = rng.chance(state.failRate);
      state.posts.push({ endpoint, eventId: String(req.headers['x-service-event-id'] ?? body.id ?? ''), type: body.type ?? '', answer: fail ? 'fail' : 'ok', at: Date.now() });
      res.writeHead(fail ? 503 : 200, { 'content-type': 'application/json' }).end(JSON.stringify({ received: !fail }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    posts: state.posts,
    get badSignatures() {
      return state.badSignatures;
    },
    secrets: state.secrets,
    calm: () => void (state.failRate = 0),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Redis's own orderly stop without saving (its data is lost), as an operator's restart does. */
async function shutdownNosave(url: string): Promise<void> {
  const client = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.call('SHUTDOWN', 'NOSAVE');
  } catch {
    // SHUTDOWN never answers: the server closes the connection
  } finally {
    client.disconnect();
  }
}

async function main(): Promise<number> {
  const started = Date.now();
  const cleanup = cleanupStack();
  const rng = new Rng(seed);
  const failures: string[] = [];
  log(`soak: ${minutes} min, ${ordersPerMinute} orders/min, Postgres connections cut every ~${cutEveryMs} ms, ${redisRestarts} Redis restart(s), style ${style}, seed ${seed}; logs in ${outDir}`);
  try {
    // --- database, chains, Redis, proxy -------------------------------------------------------
    const db = await scratchDatabase('soak');
    cleanup.add(() => db.drop());
    await runMigrations(db.url);
    const direct = createDb(db.url, { max: 2 });
    cleanup.add(() => direct.close());

    const anvil = await startAnvil({ port: 0 });
    cleanup.add(() => anvil.stop());
    const network = Network.from(31337);
    const chain = new JsonRpcProvider(anvil.url, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1 });
    cleanup.add(() => chain.destroy());
    const accounts: string[] = await chain.send('eth_accounts', []);
    const tokens = await deployTestTokens(await chain.getSigner(accounts[0]));
    const evmPayer = accounts[1];
    for (const c of Object.keys(tokens) as Currency[]) {
      await chain.send('eth_sendTransaction', [{ from: accounts[0], to: tokens[c], data: TEST_TOKEN_ABI.encodeFunctionData('mint', [evmPayer, 10n ** 40n]) }]);
    }
    await chain.send('evm_setAutomine', [false]);
    await chain.send('evm_setIntervalMining', [1]);
    const evmStart = Number(await chain.send('eth_blockNumber', []));
    const tron = await startSimTron({ blockTimeMs: blockTimeOf(CHAIN_OF.tron), solidificationLag: TRON_SOLIDIFICATION_LAG, clockLagMs: 0, payers: 1 });
    cleanup.add(() => tron.stop());
    const solana = await startSimSolana({ slotMs: blockTimeOf(CHAIN_OF.solana), finalizationLag: SOLANA_FINALIZATION_LAG, rng: rng.fork('solana') });
    cleanup.add(() => solana.stop());
    const tronState: TronLocalState = { rpcUrl: tron.node.url, genesisHash: tron.node.genesisHash, token: tron.token, startedAt: new Date().toISOString(), solidificationLag: TRON_SOLIDIFICATION_LAG };
    await setServiceState(direct.db, TRON_LOCAL_STATE_KEY, tronState);
    await setServiceState(direct.db, SOLANA_LOCAL_STATE_KEY, solanaLocalStateOf(solana.chain, solana.chain.url));

    const redis = await startRestartableRedis();
    cleanup.add(() => redis.stop());
    const proxy = await startTcpProxy(Number(new URL(db.url).port || 5432));
    cleanup.add(() => proxy.close());
    const receiver = await startSigningReceiver(rng.fork('receiver'));
    cleanup.add(() => receiver.close());

    // --- the organization and its pool (watch-only addresses, enough for every order) ----------
    const { organizationId, ownerKey } = await createOrganization(direct.db, 'soak');
    const plannedOrders = Math.ceil(minutes * ordersPerMinute);
    const randomAddress: Record<Family, () => string> = { evm: randomEvmAddress, tron: randomTronAddress, solana: randomSolanaAddress };
    for (const family of FAMILIES) {
      const now = Date.now();
      const addresses = Array.from({ length: Math.ceil(plannedOrders / FAMILIES.length) + 20 }, randomAddress[family]);
      await direct.db.insert(poolAddresses).values(addresses.map((address, i) => ({ organizationId, protocol: family, address, mode: 'self_managed' as const, status: 'available' as const, createdAt: new Date(now + i) })));
    }

    // --- the service: `npm start` on the proxy, the private Redis and these chains -------------
    const port = await freePort();
    const env: Record<string, string> = {
      NETWORK: 'local',
      API_STYLE: style,
      DATABASE_URL: throughProxy(db.url, proxy),
      REDIS_URL: redis.url,
      PORT: String(port),
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      RATE_LIMIT_ENABLED: 'false',
      START_LOCAL_CHAIN: 'false',
      RPC_URLS_ETHEREUM_LOCAL: anvil.url,
      TOKEN_ETHEREUM_LOCAL_USDT: tokens.USDT,
      TOKEN_ETHEREUM_LOCAL_USDC: tokens.USDC,
      TOKEN_ETHEREUM_LOCAL_DAI: tokens.DAI,
      RPC_URLS_TRON_LOCAL: tron.node.url,
      TOKEN_TRON_LOCAL_USDT: tron.token,
      RPC_URLS_SOLANA_LOCAL: solana.chain.url,
      TOKEN_SOLANA_LOCAL_USDC: solana.mints.USDC,
      TOKEN_SOLANA_LOCAL_USDT: solana.mints.USDT,
      // The simulation's quick schedules: more database traffic for the cuts to land in.
      CHAIN_SCAN_INTERVAL_MS: '500',
      CONFIRMATIONS_INTERVAL_MS: '500',
      WEBHOOK_ALLOW_INSECURE: 'true',
      WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
      WEBHOOK_RETRY_SCHEDULE: '0,1,2,3,5,8,13,20,30,30,30,30',
      WEBHOOK_RETRY_JITTER: '0.1',
      WEBHOOK_RELAY_INTERVAL_MS: '500',
      WEBHOOK_REQUEUE_AFTER_MS: '5000',
    };
    const exits: ProcessExit[] = [];
    let finishing = false;
    let starts = 0;
    const startService = async (): Promise<void> => {
      starts++;
      const s = spawnService(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], env, path.join(outDir, 'service.log'), started);
      cleanup.add(() => s.stop());
      s.child.once('exit', () => {
        if (finishing) return;
        // Not asked for: counted, and (as a supervisor would) started again.
        setImmediate(() => {
          const e = s.exits[0];
          if (!e) return;
          exits.push(e);
          log(`SERVICE EXITED (${e.code ?? e.signal}) at ${Math.round(e.atMs / 1000)} s: ${e.stderrTail.trim().split('\n').slice(-4).join(' | ')}`);
          if (restartOnExit) void startService().catch((err) => log(`restart failed: ${(err as Error).message}`));
        });
      });
      await s.waitFor(/ready: http:\/\/localhost:\d+\/health/, 180_000);
    };
    await startService();
    const base = `http://127.0.0.1:${port}`;
    log(`service ready on ${base} after ${Math.round((Date.now() - started) / 1000)} s`);

    // A style A success wraps its resource in data.
    const unwrap = (body: Record<string, unknown>) => (style === 'a' && body.success === true && body.data && typeof body.data === 'object' ? (body.data as Record<string, unknown>) : body);
    const api: InvariantInput['api'] = async (key, method, p) => {
      const r = await timedRequest(`${base}/api/v1${p}`, { method, headers: { 'X-API-Key': key } }, ABORT_MS);
      return { status: Number(r.status) || 0, body: unwrap(r.body) };
    };

    const endpointPath = '/merchant/hooks';
    const events = ['order.completed', 'order.expired'];
    const registered = await timedRequest(`${base}/api/v1/webhooks/endpoints`, { method: 'POST', headers: { 'X-API-Key': ownerKey.key }, body: { url: `${receiver.url}${endpointPath}`, events } }, ABORT_MS);
    if (registered.status !== '201') throw new Error(`could not register the webhook endpoint: ${registered.status} ${JSON.stringify(registered.body)}`);
    const endpoint = unwrap(registered.body);
    receiver.secrets.set(endpointPath, String(endpoint.secret));

    // --- load and faults -----------------------------------------------------------------------
    const tally = new RequestTally(4_000);
    const orders: SoakOrder[] = [];
    const notCreated: string[] = [];
    let answerLost = 0;
    const payErrors: string[] = [];
    const faultTimes: number[] = [];
    const evmQueue = { tail: Promise.resolve() as Promise<unknown> };
    const pay = async (o: SoakOrder): Promise<void> => {
      if (o.family === 'evm') {
        const sent = evmQueue.tail.then(() => chain.send('eth_sendTransaction', [{ from: evmPayer, to: tokens[o.currency], data: TEST_TOKEN_ABI.encodeFunctionData('transfer', [o.address, o.units]), gas: '0x7a120' }]));
        evmQueue.tail = sent.catch(() => {});
        await sent;
      } else if (o.family === 'tron') {
        await tron.pay(tron.payers[0], [{ to: o.address, amount: o.units }]);
      } else {
        await solana.pay([{ to: o.address, currency: o.currency, amount: o.units }]);
      }
    };
    const createAndPay = async (n: number): Promise<void> => {
      const family = FAMILIES[n % FAMILIES.length];
      const currency = rng.pick(CURRENCIES_OF[family]);
      const hundredths = rng.int(100, 9_999);
      const ref = `soak-${seed}-${n}`;
      const body = { orderReference: ref, amount: `${Math.floor(hundredths / 100)}.${String(hundredths % 100).padStart(2, '0')}`, currency, chainId: CHAIN_OF[family], paymentWindowMinutes: 120, metadata: { soak: String(n) } };
      let created: Record<string, unknown> | null = null;
      // As a client following the answers would: a 503 is retried after its Retry-After, a 409
      // IDEMPOTENCY_IN_PROGRESS shortly (a key whose 503 could not be released is held up to 60 s),
      // for up to RETRY_FOR_MS.
      for (const until = Date.now() + RETRY_FOR_MS; !created && Date.now() < until; ) {
        const sentAt = Date.now() - started;
        // The same Idempotency-Key on every attempt: an order whose answer was lost is replayed, not created twice.
        const r = await timedRequest(`${base}/api/v1/orders`, { method: 'POST', headers: { 'X-API-Key': ownerKey.key, 'Idempotency-Key': ref }, body }, ABORT_MS);
        const code = typeof r.body.code === 'string' ? r.body.code : typeof r.body.error === 'string' && /^[A-Z]\w+$/.test(r.body.error) ? r.body.error : '';
        tally.record(r.status === '201' ? '201' : `${r.status}${code ? ` ${code}` : ''}`, r.ms, sentAt);
        if (r.status === '201') created = unwrap(r.body);
        else if (r.status === '503') await sleep(1000 * Math.min(5, Number(r.headers?.get('retry-after') ?? 2)));
        else if (r.status === 'no-answer' || (r.status === '409' && (code === 'IDEMPOTENCY_IN_PROGRESS' || /still being processed/.test(String(r.body.message))))) await sleep(3_000);
        else if (r.status === '409') {
          // The key was taken over after 60 s and the order existed already (its first answer was lost).
          const [row] = await direct.db.select({ id: ordersTable.id, address: ordersTable.address }).from(ordersTable).where(eq(ordersTable.orderReference, ref));
          if (row) {
            created = { id: row.id, address: row.address };
            answerLost++;
          }
          break;
        } else break;
      }
      if (!created) {
        notCreated.push(ref);
        return;
      }
      const order: SoakOrder = { n, id: String(created.orderId ?? created.id), family, currency, address: String(created.address), units: (BigInt(hundredths) * 10n ** BigInt(DECIMALS[currency])) / 100n, paid: false };
      orders.push(order);
      await sleep(rng.int(200, 2_000));
      for (let attempt = 1; attempt <= 3 && !order.paid; attempt++) {
        try {
          await pay(order);
          order.paid = true;
        } catch (err) {
          if (attempt === 3) payErrors.push(`${order.id} on ${family}: ${(err as Error).message.slice(0, 160)}`);
          else await sleep(1_000);
        }
      }
    };

    const durationMs = minutes * 60_000;
    const cutter = startConnectionCutter(proxy, cutEveryMs, rng.fork('cuts'));
    cleanup.add(() => cutter.stop());
    const loadStart = Date.now();
    const restartsDone: Promise<void>[] = [];
    for (let i = 1; i <= redisRestarts; i++) {
      restartsDone.push(
        sleep((durationMs * i) / (redisRestarts + 1)).then(async () => {
          faultTimes.push(Date.now());
          log(`Redis: SHUTDOWN NOSAVE, back in ${redisDownMs} ms`);
          await shutdownNosave(redis.url);
          await redis.restart(redisDownMs);
          faultTimes.push(Date.now());
        }),
      );
    }
    const inFlight = new Set<Promise<void>>();
    const intervalMs = 60_000 / ordersPerMinute;
    let nextReport = loadStart + 60_000;
    for (let n = 0; Date.now() - loadStart < durationMs; n++) {
      const task: Promise<void> = createAndPay(n)
        .catch((err) => void failures.push(`order ${n}: ${(err as Error).message}`))
        .finally(() => inFlight.delete(task));
      inFlight.add(task);
      if (Date.now() >= nextReport) {
        nextReport += 60_000;
        // How long since each chain's checkpoint last moved: a scan that never commits shows here first.
        const ages = await direct.sql<{ chain_id: string; age: number }[]>`select chain_id, extract(epoch from now() - updated_at)::int as age from chain_checkpoints order by chain_id`.catch(() => []);
        const completed = await direct.sql<{ n: number }[]>`select count(*)::int as n from orders where status = 'completed'`.catch(() => [{ n: -1 }]);
        log(
          `${Math.round((Date.now() - loadStart) / 60_000)} min: ${orders.length} orders created, ${orders.filter((o) => o.paid).length} paid, ${completed[0].n} completed, ${receiver.posts.length} webhook posts, ` +
            `${cutter.figures.rst + cutter.figures.fin} cuts, ${exits.length} exits; checkpoints last moved ${ages.map((a) => `${a.chain_id} ${a.age} s`).join(', ')} ago; POST /orders ${tally.summary()}`,
        );
      }
      await sleep(loadStart + (n + 1) * intervalMs - Date.now());
    }
    await Promise.all(restartsDone);
    await Promise.all(inFlight);
    cutter.stop();
    receiver.calm();
    log(`load done after ${Math.round((Date.now() - loadStart) / 1000)} s; waiting for settlement (up to ${settleSeconds} s)`);

    // --- settlement: every paid order decided, every event delivered, the chains scanned -------
    await sleep(5_000);
    const histories: ChainHistory[] = [
      evmHistory(chain, CHAIN_OF.evm, tokens, evmStart),
      tronHistory(tron.node.url, CHAIN_OF.tron, { USDT: tron.token }, tron.startBlock),
      solanaHistory(solana.chain.node, CHAIN_OF.solana, solana.mints, solana.startSlot),
    ];
    const finalHeads = Object.fromEntries(await Promise.all(histories.map(async (h) => [h.chainId, await h.head()] as const)));
    const paidIds = orders.filter((o) => o.paid).map((o) => o.id);
    const settleDeadline = Date.now() + settleSeconds * 1000;
    let settled = false;
    let detail = '';
    while (Date.now() < settleDeadline) {
      const [row] = await direct.sql<{ unpaid: number; transfers: number; events: number; deliveries: number }[]>`
        select
          (select count(*)::int from orders where id = any(${paidIds}) and status = 'pending') as unpaid,
          (select count(*)::int from transfers where status = 'pending') as transfers,
          (select count(*)::int from events where dispatched_at is null) as events,
          (select count(*)::int from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id where d.status = 'pending' and e.enabled) as deliveries`;
      const checkpoints = new Map((await direct.sql<{ chain_id: string; n: number }[]>`select chain_id, block_number::int as n from chain_checkpoints`).map((r) => [r.chain_id, r.n]));
      const behind = Object.entries(finalHeads).filter(([c, head]) => (checkpoints.get(c) ?? -1) < head).map(([c]) => c);
      detail = `paid orders still pending ${row.unpaid}, pending transfers ${row.transfers}, undispatched events ${row.events}, pending deliveries ${row.deliveries}, chains behind their final head: ${behind.join(', ') || 'none'}`;
      if (row.unpaid === 0 && row.transfers === 0 && row.events === 0 && row.deliveries === 0 && behind.length === 0) {
        settled = true;
        break;
      }
      await sleep(2_000);
    }
    log(`settlement: ${settled ? 'reached' : 'NOT reached'} after ${Math.round((Date.now() - loadStart - durationMs) / 1000)} s (${detail})`);
    if (!settled) failures.push(`no settlement within ${settleSeconds} s: ${detail}`);

    // --- invariants and figures ---------------------------------------------------------------
    const health = await timedRequest(`${base}/health`, { method: 'GET' }, 10_000);
    const result = await checkInvariants({
      sql: direct.sql,
      histories,
      endpoints: [{ id: String(endpoint.id), organizationId, path: endpointPath, events }],
      posts: receiver.posts,
      faultTimes: [...faultTimes, ...exits.map((e) => started + e.atMs)],
      orgKeys: { [organizationId]: ownerKey.key },
      api,
    });
    const credited = orders.filter((o) => o.paid && result.apiOrders.get(o.id)?.status === 'completed');
    const lost = orders.filter((o) => o.paid && result.apiOrders.get(o.id)?.status !== 'completed');
    const [twice] = await direct.sql<{ transfers: number; completions: number }[]>`
      select
        (select count(*)::int from (select 1 from transfers where status <> 'dropped' group by tx_hash, index_in_tx having count(*) > 1) t) as transfers,
        (select count(*)::int from (select 1 from events where type = 'order.completed' group by data->>'orderId' having count(*) > 1) e) as completions`;
    const acknowledged = receiver.posts.filter((p) => p.answer === 'ok');
    const unexplainedRepeats = result.violations.filter((v) => /2xx deliveries with only/.test(v));
    const unanswered = tally.count('no-answer') + tally.count('hung');
    // Answers to retries, never to a first attempt: 409 IDEMPOTENCY_IN_PROGRESS (the key is still
    // held) and 409 DUPLICATE_ORDER_REFERENCE (an earlier attempt created the order but its answer
    // was lost: counted above). In style A both are "409 Conflict".
    const unexpectedStatuses = [...tally.byStatus.keys()].filter((s) => s !== '201' && !s.startsWith('503') && !/^409 (IDEMPOTENCY_IN_PROGRESS|DUPLICATE_ORDER_REFERENCE|Conflict)$/.test(s) && s !== 'no-answer' && s !== 'hung');

    const figures: [string, string | number][] = [
      ['wall time', `${Math.round((Date.now() - started) / 1000)} s (load ${minutes} min)`],
      ['process exits (must be 0)', exits.length === 0 ? 0 : `${exits.length}: ${exits.map((e) => `${e.code ?? e.signal} at ${Math.round(e.atMs / 1000)} s`).join(', ')}`],
      ['service starts', starts],
      ['Postgres cuts', `${cutter.figures.rst} RST + ${cutter.figures.fin} FIN, ${cutter.figures.connections} connections`],
      ['Redis restarts (SHUTDOWN NOSAVE)', redis.restarts],
      ['orders created', orders.length],
      ['orders not created (gave up after retries)', notCreated.length],
      ['orders created whose answer was lost (found by their reference after a 409)', answerLost],
      ['orders paid', orders.filter((o) => o.paid).length],
      ['payments not sent (chain refused)', payErrors.length],
      ['orders credited (GET /orders: completed)', credited.length],
      ['payments lost (paid, never credited)', lost.length],
      ['credited twice (transfers recorded twice / order.completed twice)', `${twice.transfers} / ${twice.completions}`],
      ['webhook events expected / delivered', `${result.webhooks.expected} / ${result.webhooks.delivered}`],
      ['webhook posts received / acknowledged (2xx) / refused by the receiver', `${receiver.posts.length} / ${acknowledged.length} / ${receiver.posts.length - acknowledged.length}`],
      ['webhook posts with a bad signature', receiver.badSignatures],
      ['events acknowledged more than once (allowed: at-least-once)', result.webhooks.duplicated],
      ['…of which not explained by a failed or recorded attempt (a double send)', unexplainedRepeats.length],
      ['POST /orders attempts', tally.summary()],
      ['/health at the end', `${health.status} ${JSON.stringify(health.body).slice(0, 300)}`],
    ];
    process.stdout.write('\n--- soak figures ---\n');
    for (const [k, v] of figures) process.stdout.write(`${k.padEnd(72)} ${v}\n`);
    for (const e of exits) process.stdout.write(`\nexit ${e.code ?? e.signal} at ${Math.round(e.atMs / 1000)} s, stderr tail:\n${e.stderrTail.trim().split('\n').slice(-12).join('\n')}\n`);

    if (exits.length > 0) failures.push(`${exits.length} process exit(s)`);
    if (lost.length > 0) failures.push(`${lost.length} payment(s) lost: ${lost.slice(0, 10).map((o) => `${o.id} (${o.family}, ${result.apiOrders.get(o.id)?.status ?? 'not read'})`).join(', ')}`);
    if (twice.transfers + twice.completions > 0) failures.push(`credited twice: ${twice.transfers} transfer(s), ${twice.completions} order(s)`);
    if (receiver.badSignatures > 0) failures.push(`${receiver.badSignatures} webhook post(s) with a bad signature`);
    if (notCreated.length > 0) failures.push(`${notCreated.length} order(s) not created after ${RETRY_FOR_MS / 1000} s of retries: ${notCreated.slice(0, 5).join(', ')}`);
    if (unanswered > 0) failures.push(`${unanswered} POST /orders without an answer`);
    if (unexpectedStatuses.length > 0) failures.push(`POST /orders answers other than 201 and 503: ${unexpectedStatuses.map((s) => `${s} × ${tally.count(s)}`).join(', ')}`);
    if (payErrors.length > 0) process.stdout.write(`\npayments the chains refused (a harness problem, not counted as lost):\n  ${payErrors.slice(0, 10).join('\n  ')}\n`);
    failures.push(...result.violations.map((v) => `invariant: ${v}`));
    failures.push(...result.mismatches.map((m) => `mismatch: ${m}`));
    finishing = true;
  } catch (err) {
    failures.push(`soak aborted: ${(err as Error).stack ?? String(err)}`);
  } finally {
    await cleanup.run();
  }
  process.stdout.write(failures.length === 0 ? '\nsoak passed\n' : `\nsoak FAILED:\n  ${failures.join('\n  ')}\n`);
  return failures.length === 0 ? 0 : 1;
}

void main().then(
  (code) => (process.exitCode = code),
  (err) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
