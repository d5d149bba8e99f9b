/**
 * `npm run bench:scale`: the API's hot reads and writes on a year of history against the same on
 * small tables. A busy merchant among 1,000 organizations; at BENCH_SCALE=1, 2,000,000 orders,
 * 10,000,000 transfers and 20,000,000 webhook attempts (4,000,000 events with a delivery each, five
 * attempts per delivery), half of every table the busy merchant's. Rows are generated inside
 * Postgres (INSERT … SELECT generate_series: no client in the path, faster than COPY from here).
 *
 * Prints p50/p99 (sequential requests, BENCH_REQUESTS each, 300 by default) of GET /orders and GET /transfers
 * (first page, filtered by status, a deep page), of POST /orders (allocation included), of a scan
 * range (one new block paying one of those orders among other transfers, recorded in the scan's
 * transaction), of the webhook relay (one new event fanned out, the due sweep) and of a
 * delivery's claim, first on small
 * tables, then on the large ones, with the ratio (target ≤ 2); retention over the large tables
 * (months of webhook history dropped whole); and disk use per table (partitions summed).
 * The webhook history is partitioned by month from a year back, as on an installation partitioned
 * for over a year (the migration's partition of the rows from before is replaced).
 *
 *   npm run bench:scale                    # BENCH_SCALE=0.05: 100,000 orders, 500,000 transfers, 1,000,000 attempts
 *   BENCH_SCALE=1 npm run bench:scale      # the full year (about 15 GB of disk, long on 2 cores)
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { getAddress, hexlify } from 'ethers';
import { loadConfig } from '../../core/platform/config';
import { createLogger } from '../../core/platform/logger';
import { createApiKey, createOrganization } from '../../core/organizations/organizations';
import { createService } from '../../core/service/service';
import { pruneHistory } from '../../core/maintenance/history-retention';
import { dropExpiredPartitions } from '../../core/maintenance/history-partitions';
import { claimDeliveries } from '../../core/webhooks/claim';
import { relayWebhookEvents } from '../../core/webhooks/relay';
import { newId } from '../../core/platform/ids';
import { scanChainOnce } from '../../core/detection/scan';
import type { BlockRef, ChainAdapter, ChainTransfer } from '../../core/chains/adapter-contract';
import type { Chain } from '../../core/chains/registry';
import { startApi } from '../../api/server';
import { poolAddresses } from '../../db/schema';
import { benchState, runBench, percentile } from './bench-kit';
import { insertGeneratedOrders } from './generated-orders';

const SCALE = Number(process.env.BENCH_SCALE ?? 0.05);
// p99 of 300 is the third slowest sample: of 100 it was the second, and one or two samples that
// waited for a CPU of the shared machine decided a figure (docs/production.md, the scan range).
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);
const ORDERS = Math.round(2_000_000 * SCALE);
const TRANSFERS = Math.round(10_000_000 * SCALE);
const EVENTS = Math.round(4_000_000 * SCALE);
const ATTEMPTS_PER_DELIVERY = 5;
const ORGS = 1000;
const YEAR_MS = 365 * 86_400_000;
const CHUNK = 250_000;
const store = benchState('scale');
const { dbUrl: DB_URL, redisUrl: REDIS_URL, prefix: PREFIX } = store;
// BENCH_PG_LOG=1 (a diagnosis, not figures): the service's statements over 5 ms go to the server's
// log with their plans (auto_explain, buffers and I/O timings), lock waits over 5 ms too, and the
// tail samples are printed with their times to find them there.
const PG_LOG = process.env.BENCH_PG_LOG === '1';
const SERVICE_DB_URL = PG_LOG
  ? `${DB_URL}?log_min_duration_statement=5&session_preload_libraries=auto_explain&auto_explain.log_min_duration=5&auto_explain.log_analyze=on&auto_explain.log_buffers=on&auto_explain.log_nested_statements=on&track_io_timing=on&log_lock_waits=on&deadlock_timeout=5ms`
  : DB_URL;

const fmt = (n: number) => n.toLocaleString('en-US');

interface Figure {
  p50: number;
  p99: number;
  /** The p50 sample and those at or above p99, with where their time went (timedCall given backends to watch). */
  typical?: Sample;
  tail?: Sample[];
}

/**
 * One sample's wall time and, from /proc/<pid>/schedstat (Linux), the ms this process's main
 * thread and the watched Postgres backends (summed) spent on a CPU and waiting in a run queue for
 * one. What is left is waiting for each other, for I/O or for locks.
 */
interface Sample {
  at: Date;
  ms: number;
  nodeCpu: number;
  nodeWait: number;
  pgCpu: number;
  pgWait: number;
}

function schedstat(pids: number[]): [number, number] {
  let cpu = 0;
  let wait = 0;
  for (const path of pids.map((pid) => (pid === process.pid ? `/proc/${pid}/task/${pid}/schedstat` : `/proc/${pid}/schedstat`))) {
    try {
      const [c, w] = readFileSync(path, 'utf8').split(' ').map(Number);
      cpu += c / 1e6;
      wait += w / 1e6;
    } catch {
      // Not Linux, or the backend is gone: counted as nothing.
    }
  }
  return [cpu, wait];
}

async function timed(count: number, request: (i: number) => Promise<Response>): Promise<Figure> {
  const samples: number[] = [];
  // Warm-up (plans cached, pages in memory), not counted.
  for (let i = -3; i < 0; i++) await (await request(count + 10 - i)).arrayBuffer();
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    const res = await request(i);
    const body = await res.arrayBuffer();
    samples.push(performance.now() - t);
    if (!res.ok) throw new Error(`HTTP ${res.status} from ${res.url}: ${Buffer.from(body).toString()}`);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/**
 * Rows `from`..`to` (1-based) of each history table, spread over the year before now: even rows the
 * busy merchant's, odd ones among the other organizations. Ids sort by time as the service's do.
 */
async function generate(sql: postgres.Sql, busyOrg: string, table: 'orders' | 'transfers' | 'events', from: number, to: number, total: number): Promise<void> {
  const start = Date.now() - YEAR_MS;
  const step = YEAR_MS / total;
  const at = `to_timestamp((${start} + g::float8 * ${step}) / 1000.0)`;
  // Time-ordered ids as newId makes them: the ULID time part of the row's moment, then the row number.
  const id = (prefix: string) => `'${prefix}_' || pg_temp.ulid_time((${start} + g::float8 * ${step})::bigint) || lpad(g::text, 16, '0')`;
  const org = `case when g % 2 = 0 then '${busyOrg}' else 'org_scale_' || (g % ${ORGS - 1}) end`;
  if (table === 'orders') {
    await insertGeneratedOrders(sql, { id, org, at }, from, to);
  } else if (table === 'transfers') {
    // Every fifth transfer pays an order (the orders exist: there are a fifth as many).
    await sql.unsafe(`
      insert into transfers (id, chain_id, protocol, currency, token_address, amount, from_address, to_address, tx_hash, index_in_tx, log_index, block_number, block_hash,
                             block_timestamp, confirmations, status, organization_id, order_id, counted, credited, created_at, confirmed_at)
      select ${id('trf')}, 'ethereum-sepolia', 'evm', 'USDT', '0x' || repeat('ab', 20), 10500000, '0x' || substr(md5('f' || g), 1, 40),
             '0x' || substr(md5('t' || g), 1, 40), '0x' || md5('x' || g) || md5('y' || g), 0, 0, g, '0x' || md5('b' || g) || md5('c' || g),
             ${at}, 12, 'confirmed', ${org}, case when g % 5 = 0 and g / 5 between 1 and ${ORDERS} then (select o.id from orders o where o.order_reference = 'ref-' || (g / 5) and o.organization_id = ${org}) end,
             g % 5 = 0, g % 5 = 0, ${at}, ${at} + interval '3 minutes'
      from generate_series(${from}, ${to}) g`);
  } else {
    await sql.unsafe(`
      insert into events (id, organization_id, type, data, created_at, dispatched_at)
      select ${id('evt')}, ${org}, 'order.completed', jsonb_build_object('orderId', 'ord_' || g), ${at}, ${at}
      from generate_series(${from}, ${to}) g`);
    await sql.unsafe(`
      insert into webhook_deliveries (id, organization_id, event_id, endpoint_id, status, attempt_count, created_at, delivered_at, last_attempt_at)
      select ${id('whd')}, ${org}, ${id('evt')}, case when g % 2 = 0 then 'whe_scale_busy' else 'whe_scale_other' end,
             'succeeded', ${ATTEMPTS_PER_DELIVERY}, ${at}, ${at}, ${at}
      from generate_series(${from}, ${to}) g`);
    await sql.unsafe(`
      insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, outcome)
      select ${id('whd')}, n, ${at} + (n || ' minutes')::interval, 40, case when n = ${ATTEMPTS_PER_DELIVERY} then 200 else 500 end,
             case when n = ${ATTEMPTS_PER_DELIVERY} then 'succeeded' else 'failed' end
      from generate_series(${from}, ${to}) g, generate_series(1, ${ATTEMPTS_PER_DELIVERY}) n`);
  }
}

/**
 * A chain of the bench's own (no RPC): each `mine` adds one block with the transfers given, which
 * the real scan (scanChainOnce) reads as its next range and records in its transaction.
 */
class BenchChain implements ChainAdapter {
  readonly protocol = 'evm' as const;
  readonly calls = 0;
  private readonly blocks: (BlockRef & { transfers: ChainTransfer[] })[] = [];

  constructor(readonly chain: Chain) {
    this.mine([]);
  }

  mine(payments: { to: string; amount: bigint }[]): void {
    const number = this.blocks.length;
    const block = { number, hash: hexlify(randomBytes(32)), parentHash: this.blocks[number - 1]?.hash, timestamp: Math.floor(Date.now() / 1000) };
    const transfers = payments.map((p, i): ChainTransfer => ({
      chainId: this.chain.chainId, txHash: hexlify(randomBytes(32)), indexInTx: 0, blockLogIndex: i, currency: 'USDT',
      tokenAddress: this.chain.tokens.USDT?.address ?? '', fromAddress: getAddress(hexlify(randomBytes(20))), toAddress: p.to,
      amount: p.amount, blockNumber: number, blockHash: block.hash, blockTimestamp: block.timestamp,
    }));
    this.blocks.push({ ...block, transfers });
  }

  async head(): Promise<BlockRef> {
    return this.blocks[this.blocks.length - 1];
  }
  async finalizedBlockNumber(): Promise<number | null> {
    return null;
  }
  async blockAt(height: number): Promise<BlockRef | null> {
    return this.blocks[height] ?? null;
  }
  async transfersInRange(fromBlock: number, toBlock: number): Promise<ChainTransfer[]> {
    return this.blocks.slice(fromBlock, toBlock + 1).flatMap((b) => b.transfers);
  }
  async verifyTokens() {
    return { ok: true, problems: [] };
  }
}

/**
 * p50/p99 of `run` after `prepare` (not timed), sequentially. With `backends` (Postgres backend
 * pids), also where the tail samples' time went (Sample); /proc is read outside the timed span.
 */
async function timedCall<T>(count: number, prepare: (i: number) => Promise<T>, run: (value: T) => Promise<unknown>, backends?: number[]): Promise<Figure> {
  const samples: Sample[] = [];
  for (let i = -3; i < count; i++) {
    const value = await prepare(i);
    const at = new Date();
    const [nodeCpu, nodeWait] = backends ? schedstat([process.pid]) : [0, 0];
    const [pgCpu, pgWait] = backends ? schedstat(backends) : [0, 0];
    const t = performance.now();
    await run(value);
    const ms = performance.now() - t;
    if (i < 0) continue;
    const [nodeCpu2, nodeWait2] = backends ? schedstat([process.pid]) : [0, 0];
    const [pgCpu2, pgWait2] = backends ? schedstat(backends) : [0, 0];
    samples.push({ at, ms, nodeCpu: nodeCpu2 - nodeCpu, nodeWait: nodeWait2 - nodeWait, pgCpu: pgCpu2 - pgCpu, pgWait: pgWait2 - pgWait });
  }
  samples.sort((a, b) => a.ms - b.ms);
  const ms = samples.map((s) => s.ms);
  const p99 = percentile(ms, 99);
  const p50 = percentile(ms, 50);
  return { p50, p99, ...(backends ? { typical: samples.find((s) => s.ms === p50), tail: samples.filter((s) => s.ms >= p99).reverse() } : {}) };
}

const describeSample = (s: Sample) =>
  `${PG_LOG ? `${s.at.toISOString().slice(11, 23)} ` : ''}${s.ms.toFixed(1)} ms (Node ${s.nodeCpu.toFixed(1)} on a CPU + ${s.nodeWait.toFixed(1)} waiting for one, Postgres ${s.pgCpu.toFixed(1)} + ${s.pgWait.toFixed(1)})`;

/** Disk use per table, a partitioned table's partitions summed. */
async function printDiskUse(sql: postgres.Sql, when: string): Promise<void> {
  await sql`analyze`;
  const sizes = await sql<{ table: string; rows: string; total: string; indexes: string }[]>`
    select coalesce(p.relname, c.relname) || case when p.relname is null then '' else ' (' || count(*) || ' partitions)' end as table,
           sum(greatest(c.reltuples, 0))::bigint as rows, pg_size_pretty(sum(pg_total_relation_size(c.oid))) as total, pg_size_pretty(sum(pg_indexes_size(c.oid))) as indexes
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    left join pg_inherits i on i.inhrelid = c.oid left join pg_class p on p.oid = i.inhparent
    where n.nspname = current_schema() and c.relkind = 'r' group by coalesce(p.relname, c.relname), p.relname
    order by sum(pg_total_relation_size(c.oid)) desc limit 8`;
  console.log(`\ndisk per table, ${when} (rows as estimated by Postgres):`);
  for (const r of sizes) console.log(`  ${r.table.padEnd(22)} ${fmt(Number(r.rows)).padStart(12)} rows  ${r.total.padStart(8)} (indexes ${r.indexes})`);
}

async function main() {
  // A real network (no local chain to start); Sepolia's USDT needs an address: any contract will do.
  const config = loadConfig({ DATABASE_URL: SERVICE_DB_URL, REDIS_URL, REDIS_PREFIX: PREFIX, NETWORK: 'testnet', SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex'), ALLOW_INSECURE_PUBLIC_URL: 'true', TOKEN_ETHEREUM_SEPOLIA_USDT: getAddress(hexlify(randomBytes(20))), LOG_LEVEL: 'silent', RATE_LIMIT_ENABLED: 'false', PORT: '0', METRICS_PORT: '0' });
  const { ctx, dbHandle } = await createService(config, { logger: createLogger('silent'), kind: 'api' });
  const sql = postgres(DB_URL, { max: 1, onnotice: () => {} });
  let api: Awaited<ReturnType<typeof startApi>> | null = null;
  try {
    await sql.unsafe(`create function pg_temp.ulid_time(ms bigint) returns text language sql immutable as $$
      select string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz', ((ms >> (5 * (9 - i))) & 31)::int + 1, 1), '' order by i) from generate_series(0, 9) i $$`);
    const { organizationId: busy, ownerKey } = await createOrganization(ctx.db, 'Busy merchant');
    const member = await createApiKey(ctx.db, { organizationId: busy, keyId: ownerKey.id, role: 'owner' }, busy, { name: 'bench', role: 'member' });
    await sql.unsafe(`insert into organizations (id, name) select 'org_scale_' || g, 'Organization ' || g from generate_series(0, ${ORGS - 2}) g`);
    await sql.unsafe(`insert into webhook_endpoints (id, organization_id, url, events, secret_ciphertext) values
      ('whe_scale_busy', '${busy}', 'https://hooks.example/busy', '{order.completed}', 'x'), ('whe_scale_other', 'org_scale_1', 'https://hooks.example/other', '{order.completed}', 'x')`);
    for (let i = 0; i < 50_000; i += 5000) {
      const now = Date.now();
      await ctx.db.insert(poolAddresses).values(Array.from({ length: 5000 }, (_, j) => ({ organizationId: busy, protocol: 'evm' as const, address: getAddress(hexlify(randomBytes(20))), mode: 'self_managed' as const, status: 'available' as const, createdAt: new Date(now + j) })));
    }
    // Monthly history partitions from 13 months back (before any row is written).
    await sql.unsafe(`
      do $$ begin
        ${['webhook_attempts', 'webhook_deliveries', 'events'].map((t) => `alter table ${t} detach partition ${t}_before_partitioning; drop table ${t}_before_partitioning;`).join('\n')}
        ${['webhook_attempts', 'webhook_deliveries', 'events'].map((t) => `execute format('drop table %I', '${t}_' || to_char(now() at time zone 'UTC', '"p"YYYYMM'));`).join('\n')}
        for i in 0..13 loop
          perform create_history_partition(date_trunc('month', now() at time zone 'UTC') at time zone 'UTC' - make_interval(months => i),
            date_trunc('month', now() at time zone 'UTC') at time zone 'UTC' - make_interval(months => i - 1),
            to_char(date_trunc('month', now() at time zone 'UTC') - make_interval(months => i), '"p"YYYYMM'));
        end loop;
      end $$`);
    api = await startApi(ctx);
    const base = `http://127.0.0.1:${api.port}/api/v1`;
    const deps = { db: ctx.db, config: ctx.config, clock: ctx.clock };
    const headers = { 'x-api-key': member.key };
    const get = (path: string) => () => fetch(`${base}${path}`, { headers });
    const tag = randomBytes(4).toString('hex');
    const post = (round: string) => (i: number) =>
      fetch(`${base}/orders`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ orderReference: `${round}-${tag}-${i}`, amount: '10.5', currency: 'USDT', chainId: 'ethereum-sepolia' }) });
    const chain = ctx.registry.get('ethereum-sepolia')!;
    const benchChain = new BenchChain(chain);
    const payment = 105n * 10n ** BigInt(ctx.registry.requireToken(chain, 'USDT').decimals - 1);
    // Each range: one block paying one of the round's orders (timed's references, warm-up ones
    // included) among 20 transfers to addresses outside the pool.
    const scanRanges = async (round: string) => {
      // The service's connections (the pool's, opened by the rounds before): their CPU time and waits.
      const backends = (await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`).map((r) => r.pid);
      const figure = await timedCall(REQUESTS, async (i) => {
        const [order] = await sql`select address from orders where organization_id = ${busy} and order_reference = ${`${round}-${tag}-${i < 0 ? REQUESTS + 10 - i : i}`}`;
        benchChain.mine([{ to: order.address, amount: payment }, ...Array.from({ length: 20 }, () => ({ to: getAddress(hexlify(randomBytes(20))), amount: payment }))]);
      }, async () => {
        const step = await scanChainOnce(ctx, benchChain);
        if (step.status !== 'scanned' && step.status !== 'initialized') throw new Error(`scan range: ${step.status}`);
      }, backends);
      const [{ paid }] = await sql`select count(*)::int as paid from transfers t join orders o on o.id = t.order_id where o.organization_id = ${busy} and o.order_reference like ${`${round}-${tag}-%`}`;
      if (paid < REQUESTS) throw new Error(`scan range: ${paid} of ${REQUESTS} orders' payments attributed`);
      return figure;
    };
    const measure = async (round: string, deepPage: number) => ({
      'GET /orders first page': await timed(REQUESTS, get('/orders?limit=20')),
      'GET /orders ?status=expired': await timed(REQUESTS, get('/orders?limit=20&status=expired')),
      [`GET /orders deep page`]: await timed(REQUESTS, get(`/orders?limit=20&page=${deepPage}`)),
      'GET /transfers first page': await timed(REQUESTS, get('/transfers?limit=20')),
      'GET /transfers ?status=confirmed': await timed(REQUESTS, get('/transfers?limit=20&status=confirmed')),
      [`GET /transfers deep page`]: await timed(REQUESTS, get(`/transfers?limit=20&page=${deepPage}`)),
      'POST /orders (allocation)': await timed(REQUESTS, post(round)),
      'scan range (record transaction)': await scanRanges(round),
      'webhook relay (1 new event)': await timedCall(REQUESTS, async () => {
        await sql.unsafe(`insert into events (id, organization_id, type, data) values ('${newId('evt')}', '${busy}', 'order.completed', '{"orderId":"ord_bench"}')`);
      }, () => relayWebhookEvents(deps)),
      'delivery claim': await timedCall(REQUESTS, async () => {
        const eventId = newId('evt');
        const deliveryId = `whd_${eventId.slice(4)}`;
        await sql.unsafe(`insert into events (id, organization_id, type, data, dispatched_at) values ('${eventId}', '${busy}', 'order.completed', '{}', now());
          insert into webhook_deliveries (id, organization_id, event_id, endpoint_id, next_attempt_at) values ('${deliveryId}', '${busy}', '${eventId}', 'whe_scale_busy', now())`);
        return deliveryId;
      }, async (deliveryId) => {
        const [claimed] = await claimDeliveries(deps, [{ deliveryId, attempt: 1 }]);
        if ('skip' in claimed) throw new Error(`not claimed: ${claimed.skip}`);
      }),
    });

    // Small tables: 2,000 orders, 10,000 transfers, 4,000 events (half the busy merchant's).
    const small = { orders: 2000, transfers: 10_000, events: 4000 };
    for (const table of ['orders', 'transfers', 'events'] as const) await generate(sql, busy, table, 1, small[table], small[table]);
    await sql`analyze`;
    console.log(`scale ${SCALE}: ${fmt(ORDERS)} orders, ${fmt(TRANSFERS)} transfers, ${fmt(EVENTS)} events and deliveries, ${fmt(EVENTS * ATTEMPTS_PER_DELIVERY)} webhook attempts, ${ORGS} organizations; ${REQUESTS} sequential requests per figure`);
    const before = await measure('small', 40);
    // The round's deliveries delivered, as a delivery worker (none runs here) would have: left
    // pending, every one would be due by the next round, whose relay would requeue them all on each
    // run (a backlog the small round never had, not history).
    await sql`update webhook_deliveries set status = 'succeeded', next_attempt_at = null, delivered_at = now() where status = 'pending'`;

    // The year: the rest of every table, in chunks (progress printed).
    for (const [table, total] of [['orders', ORDERS], ['transfers', TRANSFERS], ['events', EVENTS]] as const) {
      const t = performance.now();
      for (let from = small[table] + 1; from <= total; from += CHUNK) await generate(sql, busy, table, from, Math.min(total, from + CHUNK - 1), total);
      console.log(`  generated ${table === 'events' ? 'events, deliveries and attempts' : table} to ${fmt(total)} in ${((performance.now() - t) / 1000).toFixed(0)} s`);
    }
    await sql`vacuum analyze`;
    // The generation's dirty pages written now, not by a checkpoint running under the measurements.
    await sql`checkpoint`;
    const after = await measure('large', Math.floor(ORDERS / 2 / 20 / 2));

    console.log('\n| request | small p50 | small p99 | large p50 | large p99 | p99 ratio (target ≤ 2) |');
    console.log('|---|---|---|---|---|---|');
    for (const name of Object.keys(before) as (keyof typeof before)[]) {
      const [b, a] = [before[name], after[name]];
      console.log(`| ${name} | ${b.p50.toFixed(1)} ms | ${b.p99.toFixed(1)} ms | ${a.p50.toFixed(1)} ms | ${a.p99.toFixed(1)} ms | ${(a.p99 / b.p99).toFixed(1)} |`);
    }
    console.log(`(deep page: page ${Math.floor(ORDERS / 2 / 20 / 2)} of 20 on the large tables, page 40 on the small)`);
    for (const [round, figure] of [['small', before['scan range (record transaction)']], ['large', after['scan range (record transaction)']]] as const) {
      console.log(`scan range, ${round} tables: the p50 sample ${describeSample(figure.typical!)}; at or above p99 ${figure.tail!.map(describeSample).join('; ')}`);
    }

    await printDiskUse(sql, 'a year of history');

    // Retention over the year: a 90-day window drops about three quarters of the delivery history, month by month.
    const [count] = await sql`select (select count(*) from events)::bigint as events, (select count(*) from webhook_attempts)::bigint as attempts`;
    const t = performance.now();
    const { dropped } = await dropExpiredPartitions(ctx.db, new Date(), 90);
    await pruneHistory(ctx.db, new Date(), { eventDays: 90, batchSize: 1000, maxBatches: 100 });
    const s = (performance.now() - t) / 1000;
    const [left] = await sql`select (select count(*) from events)::bigint as events, (select count(*) from webhook_attempts)::bigint as attempts`;
    console.log(`\nretention (90 days): dropped ${dropped.length} months (${dropped.join(', ')}): ${fmt(Number(count.events) - Number(left.events))} events with their deliveries and ${fmt(Number(count.attempts) - Number(left.attempts))} attempts in ${s.toFixed(2)} s`);

    await printDiskUse(sql, 'after retention');
  } finally {
    await api?.close();
    await sql.end();
    await dbHandle.close();
    await store.remove();
  }
}

runBench(main);
