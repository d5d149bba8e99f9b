/**
 * Address pool benchmark (issue 3). Makes its own database (removed at the end) and prints:
 *  - import rate of 100,000 addresses through POST /address-pool/import (target ≥ 20,000/s),
 *    into an empty pool and again with 1,000,000 addresses already stored;
 *  - allocation latency p50/p99 with 1,000,000 addresses in the pool (target p99 < 10 ms),
 *    one transaction per allocation, sequential and 8 at a time.
 * Usage: npm run bench:pool   (DATABASE_URL / REDIS_URL pick the servers; the database name is ours)
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import postgres from 'postgres';
import { getAddress, hexlify } from 'ethers';
import { createApp } from '../../api/app';
import { PaymentPageCache } from '../../core/orders/payment-page-cache';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { systemClock } from '../../core/platform/clock';
import { loadConfig } from '../../core/platform/config';
import { DetectionState } from '../../core/service/detection-state';
import { newProcessMemory } from '../../core/service/process-memory';
import { createLogger } from '../../core/platform/logger';
import { createOrganization } from '../../core/organizations/organizations';
import { allocatePoolAddress } from '../../core/pool/allocation';
import { validateImportCsv } from '../../core/pool/import';
import { createProducerRedis, deleteKeysWithPrefix } from '../../core/platform/redis';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { closeQueues, createQueues } from '../../core/jobs/catalog';
import { bullJobQueue } from '../../core/jobs/bullmq-job-queue';
import { createKeyCache } from '../../api/deps';
import { percentile } from './bench-kit';

const IMPORT_COUNT = 100_000;
const POOL_SIZE = 1_000_000;
const ALLOCATIONS = 2_000;

const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const baseUrl = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const dbName = `sg_bench_pool_${runId}`;
const dbUrl = new URL(baseUrl.toString());
dbUrl.pathname = `/${dbName}`;

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const pct = percentile;

function csvOf(count: number): string {
  const lines = ['address,protocol,derivation_index,master_public_key'];
  for (let i = 0; i < count; i++) lines.push(`${getAddress(hexlify(randomBytes(20)))},evm,,`);
  return lines.join('\n');
}

async function main() {
  await runMigrations(dbUrl.toString());
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: dbUrl.toString(),
    REDIS_PREFIX: `sgb_${runId}`,
    RATE_LIMIT_ENABLED: 'false',
    LOG_LEVEL: 'warn',
    NETWORK: 'local',
  });
  const dbHandle = createDb(config.databaseUrl, { max: 16 });
  const redis = createProducerRedis(config.redisUrl);
  const queues = createQueues(redis, config.redisPrefix);
  const logger = createLogger('warn');
  const ctx = { config, db: dbHandle.db, registry: ChainRegistry.forNetwork('local', SCANNED_FAMILIES), clock: systemClock, logger, jobs: bullJobQueue(queues), detection: new DetectionState(), memory: newProcessMemory(config) };
  const keyCache = createKeyCache(ctx);
  // No page requests here: the page limiter may share the producer connection.
  const deps = { ...ctx, redis, pageLimitRedis: redis, queues, keyCache, paymentPages: new PaymentPageCache() };
  const server = http.createServer(createApp(config, deps)).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as AddressInfo).port;
  const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
  console.log(`machine: ${os.cpus().length} cores, load average ${load()} (other processes share these cores)`);
  try {
    const importer = await createOrganization(dbHandle.db, 'Bench importer');
    const key = importer.ownerKey.key;
    const importOnce = async (label: string) => {
      const body = JSON.stringify({ protocol: 'evm', mode: 'self_managed', addresses: csvOf(IMPORT_COUNT) });
      const t = process.hrtime.bigint();
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/address-pool/import`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
        body,
      });
      const out = (await res.json()) as { imported?: number; message?: string };
      const elapsed = ms(t);
      if (res.status !== 200 || out.imported !== IMPORT_COUNT) throw new Error(`import failed: ${res.status} ${JSON.stringify(out).slice(0, 300)}`);
      console.log(`import ${label}: ${IMPORT_COUNT} addresses (${(body.length / 1e6).toFixed(1)} MB) in ${(elapsed / 1000).toFixed(2)} s = ${Math.round(IMPORT_COUNT / (elapsed / 1000))} addresses/s (target ≥ 20000)`);
    };
    await importOnce('into an empty pool');
    {
      const csv = csvOf(IMPORT_COUNT);
      const t0 = process.hrtime.bigint();
      validateImportCsv({ protocol: 'evm', mode: 'self_managed', csv });
      const v = ms(t0);
      console.log(`  of which line validation (CPU, EIP-55 keccak per address): ${(v / 1000).toFixed(2)} s for ${IMPORT_COUNT} lines = ${Math.round(IMPORT_COUNT / (v / 1000))} lines/s`);
    }

    // 1,000,000 available addresses for one organization, loaded by SQL.
    const big = await createOrganization(dbHandle.db, 'Bench big pool');
    let t = process.hrtime.bigint();
    await dbHandle.sql`
      insert into pool_addresses (organization_id, protocol, address, mode, status, created_at, updated_at)
      select ${big.organizationId}, 'evm', '0x' || lpad(to_hex(i), 40, '0'), 'self_managed', 'available',
             timestamptz '2026-01-01' + i * interval '1 millisecond', now()
      from generate_series(1, ${POOL_SIZE}) as i`;
    await dbHandle.sql`analyze pool_addresses`;
    console.log(`bulk-loaded ${POOL_SIZE} pool addresses in ${(ms(t) / 1000).toFixed(1)} s`);

    await importOnce(`with ${POOL_SIZE + IMPORT_COUNT} addresses stored`);

    const allocateOnce = async (i: number) => {
      const start = process.hrtime.bigint();
      await dbHandle.db.transaction((tx) =>
        allocatePoolAddress(tx, { organizationId: big.organizationId, protocol: 'evm', holder: { kind: 'order', orderId: `ord_bench${i}` }, now: new Date() }),
      );
      return ms(start);
    };
    for (let i = 0; i < 50; i++) await allocateOnce(-i - 1); // warm-up
    const report = (label: string, samples: number[], wall: number) => {
      const sorted = [...samples].sort((a, b) => a - b);
      console.log(
        `allocation ${label}: n=${samples.length} p50=${pct(sorted, 50).toFixed(2)} ms p99=${pct(sorted, 99).toFixed(2)} ms max=${sorted[sorted.length - 1].toFixed(2)} ms ` +
          `(${Math.round(samples.length / (wall / 1000))}/s; target p99 < 10 ms)`,
      );
    };
    t = process.hrtime.bigint();
    const sequential: number[] = [];
    for (let i = 0; i < ALLOCATIONS; i++) sequential.push(await allocateOnce(i));
    report(`sequential, ${POOL_SIZE} in pool`, sequential, ms(t));

    t = process.hrtime.bigint();
    const concurrent: number[] = [];
    let next = ALLOCATIONS;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 2 * ALLOCATIONS) concurrent.push(await allocateOnce(next++));
      }),
    );
    report(`8 concurrent, ${POOL_SIZE} in pool`, concurrent, ms(t));

    // Server-side cost of the pick itself, independent of round trips and machine load.
    const plans: number[] = [];
    for (let i = 0; i < 200; i++) {
      const [row] = await dbHandle.sql`
        explain (analyze, format json)
        select id from pool_addresses
        where organization_id = ${big.organizationId} and protocol = 'evm' and status = 'available'
        order by recycled_at asc nulls first, created_at asc, id asc limit 1 for update skip locked`;
      plans.push((row['QUERY PLAN'] as { 'Execution Time': number }[])[0]['Execution Time']);
    }
    plans.sort((a, b) => a - b);
    console.log(`allocation pick, server execution time (EXPLAIN ANALYZE, ${POOL_SIZE} in pool): p50=${pct(plans, 50).toFixed(3)} ms p99=${pct(plans, 99).toFixed(3)} ms`);
    console.log(`machine load average at the end: ${load()}`);
  } finally {
    server.close();
    await closeQueues(queues);
    await keyCache.close();
    await deleteKeysWithPrefix(redis, config.redisPrefix).catch(() => {});
    redis.disconnect();
    await dbHandle.close();
    const admin = postgres(baseUrl.toString(), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
