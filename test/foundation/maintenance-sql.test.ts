import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { ulid } from 'ulid';
import * as schema from '../../db/schema';
import type { Database } from '../../db/client';
import { createPartitionsAhead, dropExpiredPartitions, MONTHS_AHEAD } from '../../core/maintenance/history-partitions';
import { pruneHistory } from '../../core/maintenance/history-retention';
import { foldListCounts } from '../../core/maintenance/list-counts';
import { vacuumQueueTables } from '../../core/maintenance/vacuum-queue-tables';
import { createTestOrg, testDb, TEST_DATABASE_URL } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { eventually } from '../helpers/wait';

/**
 * Snapshots of the maintenance statements (core/maintenance: table maintenance, history partitions,
 * history retention), as the driver receives them while each operation runs against this file's
 * database: the same review as the hot statements' (hand-written-sql.test.ts), one .sql file each in
 * hand-written-sql/maintenance/, with what each $n held. Months, partition names, ids and times are
 * normalised, so a snapshot changes only when the statement does. Each operation names the distinct
 * statements it sends (one an earlier operation sent is not named again), each by a part of its text;
 * a statement added, removed or matching no name or two fails here until OPERATIONS says what it is.
 * A stale or missing snapshot fails too. After a deliberate change: UPDATE_SQL_SNAPSHOTS=1 and review
 * the diff.
 */
const SNAPSHOT_DIR = path.join(__dirname, 'hand-written-sql', 'maintenance');
const DAY = 86_400_000;

const monthStart = (plus: number) => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + plus, 1));
const suffixOf = (month: Date) => `p${month.getUTCFullYear()}${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
/** An id made at a given time, as newId would have made it then. */
const idFrom = (prefix: string, at: Date) => `${prefix}_${ulid(at.getTime()).toLowerCase()}`;

interface Sent {
  text: string;
  parameters: unknown[];
}

/** A database on a connection of its own whose driver records every statement it sends. */
function recordingDb(): { db: Database; sent: Sent[]; close: () => Promise<void> } {
  const sent: Sent[] = [];
  const client = postgres(TEST_DATABASE_URL, {
    max: 1,
    onnotice: () => {},
    types: {},
    debug: (_connection, text, parameters) => {
      if (!/^\s*(begin|commit|rollback)\b/i.test(text)) sent.push({ text, parameters });
    },
  });
  return { db: drizzle(client, { schema }), sent, close: () => client.end({ timeout: 5 }) };
}

/** What varies from run to run (months, the history's partition names, ids, times) in a statement or a value. */
function normalised(text: string): string {
  return text
    .replace(/"(events|webhook_deliveries|webhook_attempts)_(p\d{6}|before_partitioning)"/g, '"$1_<month>"')
    .replace(/^((events|webhook_deliveries|webhook_attempts)_)?(p\d{6}|before_partitioning)$/, '$1<month>')
    .replace(/\b(evt|whd)_[0-9a-z]{26}\b/g, '<$1 id>')
    .replace(/\d{4}-\d\d-\d\dT[0-9:.]+Z/g, '<time>')
    // Which queue tables are vacuumed depends on Postgres' counts of dead rows.
    .replace(/^(vacuum \([^)]*\) )"\w+"/, '$1"<queue table>"');
}

/** A snapshot: the statement, then what each $n held. */
function snapshotOf({ text, parameters }: Sent): string {
  const legend = parameters.map((p, i) => `-- $${i + 1}: ${typeof p === 'string' ? `'${normalised(p)}'` : String(p)}`);
  return `${normalised(text).trim()}\n${legend.length ? `\n${legend.join('\n')}\n` : ''}`;
}

/** An order.completed event made at `at`, dispatched, with one delivery in `status` and one attempt. */
async function eventWithDelivery(organizationId: string, endpointId: string, at: Date, status: 'pending' | 'succeeded'): Promise<string> {
  const eventId = idFrom('evt', at);
  const deliveryId = idFrom('whd', at);
  const atText = at.toISOString();
  await testDb().execute(sql`insert into events (id, organization_id, type, data, created_at, dispatched_at)
    values (${eventId}, ${organizationId}, 'order.completed', '{}'::jsonb, ${atText}::timestamptz, ${atText}::timestamptz)`);
  await testDb().execute(sql`insert into webhook_deliveries (id, organization_id, event_id, endpoint_id, status, attempt_count, created_at, next_attempt_at)
    values (${deliveryId}, ${organizationId}, ${eventId}, ${endpointId}, ${status}, 1, ${atText}::timestamptz, ${status === 'pending' ? atText : null}::timestamptz)`);
  await testDb().execute(sql`insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, outcome)
    values (${deliveryId}, 1, ${atText}::timestamptz, 5, 500, 'failed')`);
  return eventId;
}

/**
 * A DETACH … CONCURRENTLY cut short, as when a worker stops during one: it waits for a transaction
 * that read the parent table and is cancelled meanwhile, leaving the partition detach-pending.
 */
async function interruptedDetach(partition: string): Promise<void> {
  const holder = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
  const detacher = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
  try {
    const [{ pid }] = await detacher<{ pid: number }[]>`select pg_backend_pid() as pid`;
    await holder.begin(async (tx) => {
      await tx`select count(*) from events`;
      const detaching = detacher.unsafe(`alter table events detach partition "${partition}" concurrently`).then(() => null, (err: unknown) => err);
      await eventually(async () => (await testDb().execute(sql`select 1 from pg_inherits i join pg_class c on c.oid = i.inhrelid where c.relname = ${partition} and i.inhdetachpending`)).length > 0, 10_000, `${partition} detach-pending`);
      await testDb().execute(sql`select pg_cancel_backend(${pid})`);
      expect(await detaching).to.have.property('code', '57014');
    });
  } finally {
    await Promise.all([holder.end(), detacher.end()]);
  }
}

describe('maintenance SQL statements (core/maintenance)', function () {
  this.timeout(60_000);
  /**
   * Each maintenance operation, what it runs, and the statements it is the first to send: each
   * one's name, and a part of its text that tells it from the others.
   */
  const OPERATIONS: { operation: string; run: (db: Database) => Promise<unknown>; statements: Record<string, string> }[] = [
    {
      operation: 'table maintenance',
      run: async (db) => {
        await vacuumQueueTables(db, { minDeadRows: 20 });
        await foldListCounts(db);
      },
      statements: {
        'vacuum.dead_rows': 'from pg_stat_user_tables',
        'vacuum.queue_table': 'vacuum (',
        'list_counts.fold_order_counts': 'from "order_counts"',
        'list_counts.fold_transfer_counts': 'from "transfer_counts"',
      },
    },
    {
      operation: 'history partitions: creation',
      run: (db) => createPartitionsAhead(db, new Date(), MONTHS_AHEAD + 1),
      statements: { 'partitions.list': "inhparent = 'webhook_deliveries'::regclass", 'partitions.create': 'create_history_partition(' },
    },
    {
      operation: 'history retention',
      run: (db) => pruneHistory(db, new Date(), { eventDays: 90, batchSize: 10, maxBatches: 10 }),
      statements: {
        'partitions.before_partitioning_bound': "c.relname = 'events_before_partitioning'",
        'retention.candidates': 'from events e',
        'retention.lock_deliveries': 'from webhook_deliveries where event_id in',
        'retention.owed_alert_emails': 'select event_id from alert_emails',
        'retention.delete_attempts': 'delete from webhook_attempts',
        'retention.delete_deliveries': 'delete from webhook_deliveries',
        'retention.delete_alert_emails': 'delete from alert_emails where event_id in',
        'retention.delete_events': 'delete from events',
      },
    },
    {
      operation: 'history partitions: drops',
      // 91 days after month +3 ends: the rows from before partitioning and months 0 to +3 are past the window.
      run: async (db) => {
        await interruptedDetach(`events_${suffixOf(monthStart(4))}`);
        return dropExpiredPartitions(db, new Date(monthStart(4).getTime() + 91 * DAY), 90);
      },
      statements: {
        'partitions.interrupted_detaches': 'where i.inhdetachpending',
        'partitions.finalize_detach': ' finalize',
        'partitions.detached_months': 'not exists (select 1 from pg_inherits',
        'partitions.drop_events': 'drop table if exists "events_',
        'partitions.drop_deliveries': 'drop table if exists "webhook_deliveries_',
        'partitions.drop_attempts': 'drop table if exists "webhook_attempts_',
        'partitions.is_attached': 'as attached',
        'partitions.owed': 'as owed',
        'partitions.detach_events': 'alter table events detach partition',
        'partitions.detach_deliveries': 'alter table "webhook_deliveries" detach partition',
        'partitions.detach_attempts': 'alter table "webhook_attempts" detach partition',
        'partitions.delete_alert_emails': 'delete from alert_emails where event_id >=',
        'partitions.attach_events': 'attach partition',
      },
    },
  ];

  /** Snapshot text by statement name, from running every operation. */
  const captured = new Map<string, string>();

  before(async () => {
    // A history that takes every path: a queue table with dead rows; before partitioning, an event
    // past the window with its delivery done (deleted row by row) and one with a delivery pending
    // (kept, so its month is too); month +1 done (detached and dropped); month +2 with a delivery
    // pending and its events detached (attached again); month +3's deliveries detached by a run
    // that stopped (dropped first); month +4's events left detach-pending (finalized).
    const org = await createTestOrg('maintenance statements');
    await seedPoolAddresses(org.organizationId, 'evm', 20);
    await testDb().execute(sql`update pool_addresses set status = 'allocated' where organization_id = ${org.organizationId}`);
    const endpointId = idFrom('whe', new Date());
    await testDb().execute(sql`insert into webhook_endpoints (id, organization_id, url, events, secret_ciphertext) values (${endpointId}, ${org.organizationId}, 'https://hooks.example/x', '{order.completed}', 'x')`);
    await eventWithDelivery(org.organizationId, endpointId, new Date(Date.now() - 120 * DAY), 'succeeded');
    await eventWithDelivery(org.organizationId, endpointId, new Date(Date.now() - 150 * DAY), 'pending');
    await eventWithDelivery(org.organizationId, endpointId, new Date(monthStart(1).getTime() + 2 * DAY), 'succeeded');
    await eventWithDelivery(org.organizationId, endpointId, new Date(monthStart(2).getTime() + 2 * DAY), 'pending');
    await testDb().execute(sql`alter table events detach partition ${sql.identifier(`events_${suffixOf(monthStart(2))}`)}`);
    await testDb().execute(sql`alter table webhook_deliveries detach partition ${sql.identifier(`webhook_deliveries_${suffixOf(monthStart(3))}`)}`);
    // Statistics reach pg_stat_user_tables within about a second of a transaction's end.
    await eventually(async () => {
      const [row] = await testDb().execute<{ dead: string }>(sql`select n_dead_tup as dead from pg_stat_user_tables where relname = 'pool_addresses' and schemaname = current_schema()`);
      return Number(row?.dead) >= 20;
    }, 10_000, 'dead rows of pool_addresses counted', 100);

    const recording = recordingDb();
    const sentBefore = new Set<string>();
    try {
      // The connection first reads Postgres' array types (the driver's own statement): before any operation.
      await recording.db.execute(sql`select 1`);
      for (const { operation, run, statements } of OPERATIONS) {
        const from = recording.sent.length;
        await run(recording.db);
        // Its statements not sent before, each as first sent.
        const fresh: Sent[] = [];
        for (const s of recording.sent.slice(from)) {
          if (!sentBefore.has(normalised(s.text))) fresh.push(s);
          sentBefore.add(normalised(s.text));
        }
        const names = fresh.map((s) => {
          const matches = Object.keys(statements).filter((name) => normalised(s.text).includes(statements[name]));
          return matches.length === 1 ? matches[0] : `(${matches.length} names match)`;
        });
        const texts = fresh.map((s, i) => `-- ${names[i]}\n${snapshotOf(s)}`).join('\n');
        expect([...names].sort(), `${operation}: each statement it sends first must have one name in OPERATIONS\n${texts}`).to.deep.equal(Object.keys(statements).sort());
        fresh.forEach((s, i) => captured.set(names[i], snapshotOf(s)));
      }
    } finally {
      await recording.close();
    }
  });

  it('are the expected set: one snapshot per statement, none stale', () => {
    const snapshots = fs.existsSync(SNAPSHOT_DIR) ? fs.readdirSync(SNAPSHOT_DIR).filter((f) => f.endsWith('.sql')).map((f) => f.slice(0, -4)).sort() : [];
    const names = [...captured.keys()].sort();
    if (process.env.UPDATE_SQL_SNAPSHOTS) {
      for (const stale of snapshots.filter((s) => !names.includes(s))) fs.rmSync(path.join(SNAPSHOT_DIR, `${stale}.sql`));
      return;
    }
    expect(names).to.deep.equal(snapshots);
  });

  it('have the snapshotted texts', () => {
    for (const [name, expected] of captured) {
      const file = path.join(SNAPSHOT_DIR, `${name}.sql`);
      if (process.env.UPDATE_SQL_SNAPSHOTS) {
        fs.mkdirSync(SNAPSHOT_DIR, { recursive: true });
        fs.writeFileSync(file, expected);
      }
      expect(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '(missing)', `${name} changed: review it, then UPDATE_SQL_SNAPSHOTS=1`).to.equal(expected);
    }
  });
});
