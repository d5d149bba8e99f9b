/**
 * Benchmark of GET /api/v1/exports/orders.csv (issue 40): BENCH_ROWS orders (default 1,000,000) of
 * one organization, inserted in one generate_series statement into a database of the run's own, then
 * streamed through the real listening API (startApi, in this process) by an HTTP client that counts
 * rows and drops the bytes. Prints rows/s, MB/s, and this process's resident memory (RSS, sampled
 * every 50 ms): before the download, at each tenth of it, and its peak. Bounded memory shows as an
 * RSS that stays flat while the rows grow tenfold (a whole file in memory would be ~250 MB).
 *
 *   npm run bench:export
 *   BENCH_ROWS=100000 npm run bench:export
 *   BENCH_SLOW_CLIENT_MS=20 npm run bench:export   # the client pauses 20 ms per chunk: backpressure holds memory flat
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { getAddress, hexlify } from 'ethers';
import { createLogger } from '../../core/platform/logger';
import { createApiKey, createOrganization } from '../../core/organizations/organizations';
import { createService } from '../../core/service/service';
import { startApi } from '../../api/server';
import { benchState, localBenchConfig, runBench } from './bench-kit';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const SLOW_CLIENT_MS = Number(process.env.BENCH_SLOW_CLIENT_MS ?? 0);
const MB = 1024 * 1024;
const mb = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;

async function main(): Promise<void> {
  const state = benchState('export');
  const config = localBenchConfig(state, { RATE_LIMIT_ENABLED: 'false', TOKEN_ETHEREUM_LOCAL_DAI: getAddress(hexlify(randomBytes(20))) });
  const { ctx, dbHandle } = await createService(config, { logger: createLogger('silent'), kind: 'api' });
  let api: Awaited<ReturnType<typeof startApi>> | null = null;
  try {
    const { organizationId, ownerKey } = await createOrganization(ctx.db, 'Export bench org');
    const viewer = await createApiKey(ctx.db, { organizationId, keyId: ownerKey.id, role: 'owner' }, organizationId, { name: 'bench', role: 'viewer' });
    let started = Date.now();
    // Its own connection: the API's statements have the request's time bound, this one does not.
    const bulk = postgres(state.dbUrl, { max: 1, onnotice: () => {} });
    // A year of a busy shop: one order every ~30 s, USDT (6 decimals) and DAI (18), a quarter completed.
    await bulk`
      insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol, address,
        pool_address_id, status, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at,
        tx_hash, block_number, confirmations, completed_at, created_at, updated_at)
      select 'ord_bench' || lpad(i::text, 21, '0'), ${organizationId}, 'bench-order-' || i, md5(i::text),
        case when i % 2 = 0 then 10500000 + i else 1000000000000000001 + i end,
        case when i % 4 = 0 then 10500000 + i else 0 end,
        case when i % 2 = 0 then 'USDT' else 'DAI' end, 'ethereum-local', 'evm', '0x' || substr(md5(i::text), 1, 40), i,
        case when i % 4 = 0 then 'completed' else 'expired' end, 30, 5, 3, c + interval '30 minutes', c + interval '35 minutes',
        case when i % 4 = 0 then '0x' || md5(i::text) || md5(i::text) end, case when i % 4 = 0 then i end, case when i % 4 = 0 then 3 end,
        case when i % 4 = 0 then c + interval '2 minutes' end, c, c
      from generate_series(1, ${ROWS}::int) as i, lateral (select timestamptz '2025-01-01T00:00:00Z' + make_interval(secs => i * 31.5) as c) t`;
    await bulk`analyze orders`;
    await bulk.end();
    console.log(`inserted ${ROWS.toLocaleString('en')} orders in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    api = await startApi(ctx);
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    const atTenths: string[] = [];
    started = Date.now();
    const { rows, bytes, firstByteMs } = await new Promise<{ rows: number; bytes: number; firstByteMs: number }>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port: api!.port, path: '/api/v1/exports/orders.csv', headers: { 'x-api-key': viewer.key } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
        const firstByteMs = Date.now() - started;
        let lines = 0;
        let total = 0;
        let nextTenth = ROWS / 10;
        res.on('data', (chunk: Buffer) => {
          total += chunk.length;
          for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
          while (lines - 1 >= nextTenth) {
            const m = process.memoryUsage();
            atTenths.push(`${mb(m.rss)}/${mb(m.heapUsed)}`);
            nextTenth += ROWS / 10;
          }
          if (SLOW_CLIENT_MS > 0) {
            res.pause();
            setTimeout(() => res.resume(), SLOW_CLIENT_MS);
          }
        });
        res.on('end', () => resolve({ rows: lines - 1, bytes: total, firstByteMs }));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    const seconds = (Date.now() - started) / 1000;
    clearInterval(sampler);
    if (rows !== ROWS) throw new Error(`the export had ${rows} rows, expected ${ROWS}`);
    console.log(`GET /exports/orders.csv  ${rows.toLocaleString('en')} rows  ${mb(bytes)}  in ${seconds.toFixed(1)} s (first byte ${firstByteMs} ms)`);
    console.log(`  ${Math.round(rows / seconds).toLocaleString('en')} rows/s  ${(bytes / MB / seconds).toFixed(1)} MB/s${SLOW_CLIENT_MS ? `  (client pausing ${SLOW_CLIENT_MS} ms per chunk)` : ''}`);
    console.log(`  RSS before ${mb(before)}  at each tenth (RSS/heap used) ${atTenths.join(' ')}  peak ${mb(peak)} (+${mb(peak - before)})`);
  } finally {
    await api?.close().catch(() => {});
    await dbHandle.close();
    await state.remove();
  }
}

runBench(main);
