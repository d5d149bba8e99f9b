import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import { MIGRATIONS_FOLDER } from '../../db/migrate';

/**
 * Migration 0014 (the webhook history partitioned by month) on a populated installation: a
 * database migrated to just before it, filled with `rows` events, as many deliveries and attempts
 * (INSERT … SELECT generate_series, ids spread over the last 90 days), then migrated while a
 * writer of the previous version goes on inserting attempts; the writer's longest wait is the
 * downtime the migration causes. Used by test/ops/history-partitions.test.ts (a small database)
 * and scripts/bench/partition-migration.ts (a million rows).
 */
export interface MigrationRun {
  rows: number;
  fillMs: number;
  migrateMs: number;
  /** The longest a concurrent insert waited during the migration. */
  writerMaxWaitMs: number;
  writerInserts: number;
  /** Row counts of events, deliveries and attempts before and after. */
  before: Counts;
  after: Counts;
  /** Bytes of the three tables (all partitions) after. */
  bytes: number;
}

export interface Counts {
  events: number;
  deliveries: number;
  attempts: number;
}

/** The migrations up to, not including, `tag`, in a folder of their own (remove it after). */
export function migrationsBefore(tag: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-migrations-'));
  fs.cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
  const journalPath = path.join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(fs.readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((e) => e.tag === tag);
  if (at < 0) throw new Error(`no migration ${tag}`);
  journal.entries = journal.entries.slice(0, at);
  fs.writeFileSync(journalPath, JSON.stringify(journal));
  return dir;
}

async function countsOf(sql: postgres.Sql): Promise<Counts> {
  const [r] = await sql`select (select count(*) from events)::int as events, (select count(*) from webhook_deliveries)::int as deliveries,
                               (select count(*) from webhook_attempts)::int as attempts`;
  return { events: r.events, deliveries: r.deliveries, attempts: r.attempts };
}

export async function runMigrationOnPopulated(databaseUrl: string, rows: number, log: (line: string) => void = () => {}): Promise<MigrationRun> {
  const admin = postgres(new URL('/postgres', databaseUrl).toString(), { max: 1, onnotice: () => {} });
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  await admin.unsafe(`drop database if exists "${name}" with (force)`);
  await admin.unsafe(`create database "${name}"`);
  await admin.end();

  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const writer = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const folder = migrationsBefore('0014_partitioned_webhook_history');
  try {
    await migrate(drizzle(sql), { migrationsFolder: folder });
    const fillStart = performance.now();
    await sql`insert into organizations (id, name) values ('org_partition_migration', 'Partition migration')`;
    await sql`insert into webhook_endpoints (id, organization_id, url, events, secret_ciphertext)
              values ('whe_partition_migration', 'org_partition_migration', 'https://hooks.example/x', '{order.completed}', 'x')`;
    // A ULID time prefix in SQL (as id_at in migration 0014, which does not exist yet here).
    await sql.unsafe(`create function pg_temp.ulid_time(ms bigint) returns text language plpgsql immutable as $$
      declare chars text := ''; begin
        for i in 1..10 loop chars := substr('0123456789abcdefghjkmnpqrstvwxyz', (ms % 32)::int + 1, 1) || chars; ms := ms / 32; end loop;
        return chars; end $$`);
    const now = Date.now();
    const spanMs = 90 * 86_400_000;
    // Row g is made (rows - g) / rows of 90 days ago; its delivery a second later; the last 1% still pending.
    await sql.unsafe(`
      insert into events (id, organization_id, type, data, created_at, dispatched_at)
      select 'evt_' || pg_temp.ulid_time(t) || lpad(g::text, 16, '0'), 'org_partition_migration', 'order.completed',
             jsonb_build_object('orderId', 'ord_' || g), to_timestamp(t / 1000.0), to_timestamp(t / 1000.0)
        from (select g, (${now} - ${spanMs}::bigint * (${rows} - g) / ${rows})::bigint as t from generate_series(1, ${rows}) g) s`);
    await sql.unsafe(`
      insert into webhook_deliveries (id, organization_id, event_id, endpoint_id, status, attempt_count, next_attempt_at, created_at)
      select 'whd_' || pg_temp.ulid_time(t + 1000) || lpad(g::text, 16, '0'), 'org_partition_migration',
             'evt_' || pg_temp.ulid_time(t) || lpad(g::text, 16, '0'), 'whe_partition_migration',
             case when g > ${rows} * 0.99 then 'pending' else 'succeeded' end, 1,
             case when g > ${rows} * 0.99 then to_timestamp(t / 1000.0) end, to_timestamp(t / 1000.0)
        from (select g, (${now} - ${spanMs}::bigint * (${rows} - g) / ${rows})::bigint as t from generate_series(1, ${rows}) g) s`);
    await sql.unsafe(`
      insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, outcome)
      select 'whd_' || pg_temp.ulid_time(t + 1000) || lpad(g::text, 16, '0'), 1, to_timestamp(t / 1000.0), 12, 200, 'succeeded'
        from (select g, (${now} - ${spanMs}::bigint * (${rows} - g) / ${rows})::bigint as t from generate_series(1, ${rows}) g) s`);
    await sql`analyze events`;
    await sql`analyze webhook_deliveries`;
    await sql`analyze webhook_attempts`;
    const fillMs = performance.now() - fillStart;
    const before = await countsOf(sql);
    log(`filled ${rows} events, deliveries and attempts in ${(fillMs / 1000).toFixed(1)} s`);

    // The previous version's writer: an attempt every 5 ms through the whole migration.
    let writing = true;
    let writerMaxWaitMs = 0;
    let writerInserts = 0;
    const lastDelivery = (await sql`select max(id) as id from webhook_deliveries`)[0].id as string;
    const writes = (async () => {
      while (writing) {
        const t0 = performance.now();
        await writer`insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, outcome)
                     values (${lastDelivery}, 2, now(), 1, 200, 'succeeded')`;
        writerMaxWaitMs = Math.max(writerMaxWaitMs, performance.now() - t0);
        writerInserts++;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await new Promise((r) => setTimeout(r, 50));
    const migrateStart = performance.now();
    await migrate(drizzle(sql), { migrationsFolder: MIGRATIONS_FOLDER });
    const migrateMs = performance.now() - migrateStart;
    await new Promise((r) => setTimeout(r, 50));
    writing = false;
    await writes;
    const after = await countsOf(sql);
    const [{ bytes }] = await sql`select (pg_total_relation_size('events_before_partitioning') + pg_total_relation_size('webhook_deliveries_before_partitioning')
                                          + pg_total_relation_size('webhook_attempts_before_partitioning'))::bigint as bytes`;
    log(`migrated in ${migrateMs.toFixed(0)} ms; a concurrent insert waited at most ${writerMaxWaitMs.toFixed(0)} ms (${writerInserts} inserts)`);
    return { rows, fillMs, migrateMs, writerMaxWaitMs, writerInserts, before, after, bytes: Number(bytes) };
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
    await writer.end({ timeout: 5 });
    await sql.end({ timeout: 5 });
  }
}
