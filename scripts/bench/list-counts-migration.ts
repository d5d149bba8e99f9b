/**
 * `npm run bench:list-counts-migration`: what upgrading past migration 0016 (the lists' kept counts
 * and their indexes) costs an installation with history. A database migrated to just before 0016
 * is filled with BENCH_ORDERS orders (default 200,000) and BENCH_TRANSFERS transfers (default
 * 1,000,000) over the past year among 100 organizations, then migrated while two writers of the
 * previous version each write every 5 ms (an order updated, a transfer updated, as the scan and
 * order expiry do). Prints the migration's time and each writer's longest wait (how long order
 * and payment writes stand still), and checks that the seeded counts equal the rows.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import { MIGRATIONS_FOLDER } from '../../db/migrate';
import { insertGeneratedOrders } from './generated-orders';
import { migrationsBefore } from './partition-migration-run';

const ORDERS = Number(process.env.BENCH_ORDERS ?? 200_000);
const TRANSFERS = Number(process.env.BENCH_TRANSFERS ?? 1_000_000);
const ORGS = 100;
const DB_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/sg_bench_list_counts_migration';
const YEAR_MS = 365 * 86_400_000;

async function recreateDatabase(create: boolean): Promise<void> {
  const admin = postgres(new URL('/postgres', DB_URL).toString(), { max: 1, onnotice: () => {} });
  const name = new URL(DB_URL).pathname.slice(1);
  await admin.unsafe(`drop database if exists "${name}" with (force)`);
  if (create) await admin.unsafe(`create database "${name}"`);
  await admin.end();
}

/** Rows 1..total of a table, spread over the year before now, time-ordered ids as the service makes them. */
async function fill(sql: postgres.Sql, table: 'orders' | 'transfers', total: number): Promise<void> {
  const start = Date.now() - YEAR_MS;
  const step = YEAR_MS / total;
  const at = `to_timestamp((${start} + g::float8 * ${step}) / 1000.0)`;
  const id = (prefix: string) => `'${prefix}_' || pg_temp.ulid_time((${start} + g::float8 * ${step})::bigint) || lpad(g::text, 16, '0')`;
  const org = `'org_lcm_' || (g % ${ORGS})`;
  for (let from = 1; from <= total; from += 100_000) {
    const to = Math.min(total, from + 99_999);
    if (table === 'orders') {
      await insertGeneratedOrders(sql, { id, org, at }, from, to);
    } else {
      await sql.unsafe(`
        insert into transfers (id, chain_id, protocol, currency, token_address, amount, from_address, to_address, tx_hash, index_in_tx, log_index, block_number, block_hash,
                               block_timestamp, confirmations, status, organization_id, counted, credited, created_at, confirmed_at)
        select ${id('trf')}, 'ethereum-sepolia', 'evm', 'USDT', '0x' || repeat('ab', 20), 10500000, '0x' || substr(md5('f' || g), 1, 40),
               '0x' || substr(md5('t' || g), 1, 40), '0x' || md5('x' || g) || md5('y' || g), 0, 0, g, '0x' || md5('b' || g) || md5('c' || g),
               ${at}, 12, case when g % 10 = 0 then 'pending' else 'confirmed' end, ${org}, false, false, ${at}, ${at} + interval '3 minutes'
        from generate_series(${from}, ${to}) g`);
    }
  }
}

/** A writer of the previous version: one statement every 5 ms until stopped; its longest wait. */
function writeEvery5Ms(sql: postgres.Sql, write: () => Promise<unknown>) {
  let writing = true;
  let maxWaitMs = 0;
  let writes = 0;
  const done = (async () => {
    while (writing) {
      const t0 = performance.now();
      await write();
      maxWaitMs = Math.max(maxWaitMs, performance.now() - t0);
      writes++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    async stop() {
      writing = false;
      await done;
      return { maxWaitMs: Math.round(maxWaitMs), writes };
    },
  };
}

async function main(): Promise<void> {
  await recreateDatabase(true);
  const sql = postgres(DB_URL, { max: 1, onnotice: () => {} });
  const orderWriter = postgres(DB_URL, { max: 1, onnotice: () => {} });
  const transferWriter = postgres(DB_URL, { max: 1, onnotice: () => {} });
  const folder = migrationsBefore('0016_list_counts');
  try {
    await migrate(drizzle(sql), { migrationsFolder: folder });
    const fillStart = performance.now();
    await sql.unsafe(`create function pg_temp.ulid_time(ms bigint) returns text language sql immutable as $$
      select string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz', ((ms >> (5 * (9 - i))) & 31)::int + 1, 1), '' order by i) from generate_series(0, 9) i $$`);
    await sql.unsafe(`insert into organizations (id, name) select 'org_lcm_' || g, 'Organization ' || g from generate_series(0, ${ORGS - 1}) g`);
    await sql.unsafe(`insert into pool_addresses (organization_id, protocol, address, mode, status)
                      values ('org_lcm_0', 'evm', '0x' || repeat('cd', 20), 'self_managed', 'available')`);
    await fill(sql, 'orders', ORDERS);
    await fill(sql, 'transfers', TRANSFERS);
    await sql`analyze orders`;
    await sql`analyze transfers`;
    const [{ bytes }] = await sql`select (pg_total_relation_size('orders') + pg_total_relation_size('transfers'))::bigint as bytes`;
    console.log(`filled ${ORDERS} orders and ${TRANSFERS} transfers (${(Number(bytes) / 1e6).toFixed(0)} MB with indexes) in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);

    const [{ id: orderId }] = await sql`select id from orders order by id desc limit 1`;
    const [{ id: transferId }] = await sql`select id from transfers order by id desc limit 1`;
    const orders = writeEvery5Ms(orderWriter, () => orderWriter`update orders set updated_at = now() where id = ${orderId}`);
    const transfers = writeEvery5Ms(transferWriter, () => transferWriter`update transfers set confirmations = confirmations + 1 where id = ${transferId}`);
    await new Promise((r) => setTimeout(r, 50));
    const migrateStart = performance.now();
    await migrate(drizzle(sql), { migrationsFolder: MIGRATIONS_FOLDER });
    const migrateMs = performance.now() - migrateStart;
    await new Promise((r) => setTimeout(r, 50));
    const orderWrites = await orders.stop();
    const transferWrites = await transfers.stop();

    const [c] = await sql`select (select count(*) from orders)::bigint as orders, (select coalesce(sum(n), 0) from order_counts)::bigint as order_counts,
                                 (select count(*) from transfers)::bigint as transfers, (select coalesce(sum(n), 0) from transfer_counts)::bigint as transfer_counts`;
    const countsExact = c.orders === c.order_counts && c.transfers === c.transfer_counts;
    console.log(
      `migrated past 0016 in ${(migrateMs / 1000).toFixed(1)} s; an order write waited at most ${orderWrites.maxWaitMs} ms (${orderWrites.writes} writes), ` +
        `a transfer write at most ${transferWrites.maxWaitMs} ms (${transferWrites.writes} writes); counts ${countsExact ? 'equal the rows' : 'DIFFER from the rows'}`,
    );
    console.log(JSON.stringify({ orders: ORDERS, transfers: TRANSFERS, migrateMs: Math.round(migrateMs), orderWriteMaxWaitMs: orderWrites.maxWaitMs, transferWriteMaxWaitMs: transferWrites.maxWaitMs, countsExact }));
    if (!countsExact) process.exitCode = 1;
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
    await Promise.all([sql.end({ timeout: 5 }), orderWriter.end({ timeout: 5 }), transferWriter.end({ timeout: 5 })]);
    await recreateDatabase(false);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
