import { sql } from 'drizzle-orm';
import type { Database, DbOrTx } from '../../db/client';
import { idAfter, idAt, idFloorAfter } from '../platform/ids';
import { OWED } from './history-owed';

/**
 * Monthly partitions of the webhook history (events, webhook deliveries, attempts; see
 * db/migrations/0014): created ahead of time, and a month dropped as a whole (the three tables'
 * partitions together) once its newest possible row is past the retention window and nothing in
 * it is still owed (history-owed.ts: an event not yet fanned out, a pending delivery, a pending
 * alert e-mail keeps its month). The hot paths never wait for it: partitions are detached
 * with DETACH … CONCURRENTLY (a short SHARE UPDATE EXCLUSIVE lock on the parent, which inserts and
 * updates do not conflict with), then dropped with nothing attached.
 */

/** Months created beyond the current one: inserts fail if no partition holds the new id. */
export const MONTHS_AHEAD = 3;

const TABLES = ['webhook_attempts', 'webhook_deliveries', 'events'] as const;
const ID_PREFIX: Record<(typeof TABLES)[number], string> = { events: 'evt', webhook_deliveries: 'whd', webhook_attempts: 'whd' };

export interface HistoryPartition {
  /** `p202611`, or `before_partitioning` (the rows from before the migration). */
  suffix: string;
  /** Ids of the events partition: [from, to); from null for the first (MINVALUE). */
  from: string | null;
  to: string;
}

function monthStart(at: Date, plusMonths = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + plusMonths, 1));
}

function suffixOf(month: Date): string {
  return `p${month.getUTCFullYear()}${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The history's months, oldest first, with their event id bounds (from the deliveries' partitions). */
export async function listHistoryPartitions(db: Database): Promise<HistoryPartition[]> {
  const rows = await db.execute<{ name: string; bound: string }>(sql`
    select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'webhook_deliveries'::regclass`);
  const out: HistoryPartition[] = [];
  for (const r of rows) {
    const m = /FROM \((?:MINVALUE|'whd_([^']*)')\) TO \('whd_([^']*)'\)/.exec(r.bound);
    if (!m) continue;
    out.push({ suffix: r.name.replace(/^webhook_deliveries_/, ''), from: m[1] === undefined ? null : `evt_${m[1]}`, to: `evt_${m[2]}` });
  }
  return out.sort((a, b) => (a.to < b.to ? -1 : 1));
}

/** Creates this month's and the next MONTHS_AHEAD months' partitions where missing; returns those created. */
export async function createPartitionsAhead(db: Database, now: Date, monthsAhead = MONTHS_AHEAD): Promise<string[]> {
  const existing = await listHistoryPartitions(db);
  const created: string[] = [];
  for (let i = 0; i <= monthsAhead; i++) {
    const from = monthStart(now, i);
    const [lo, hi] = [idAt('evt', from), idAt('evt', monthStart(now, i + 1))];
    // A month partly covered already (this month after the migration's cut-over, or the rows from before) is left as it is.
    if (existing.some((p) => (p.from === null || p.from < hi) && lo < p.to)) continue;
    const suffix = suffixOf(from);
    await db.execute(sql`select create_history_partition(${from.toISOString()}::timestamptz, ${monthStart(now, i + 1).toISOString()}::timestamptz, ${suffix})`);
    created.push(suffix);
  }
  return created;
}

export interface DropResult {
  dropped: string[];
  /** Months past the window kept because something in them is still owed. */
  kept: string[];
}

/** What keeps a month: owed work among its rows (looked for in its tables, attached or not). */
async function owedIn(db: Database, p: HistoryPartition): Promise<boolean> {
  const [row] = await db.execute<{ owed: boolean }>(sql`
    select exists (select 1 from ${sql.identifier(`events_${p.suffix}`)} where ${OWED.events})
        or exists (select 1 from ${sql.identifier(`webhook_deliveries_${p.suffix}`)} where ${OWED.webhookDeliveries})
        or exists (select 1 from alert_emails where ${OWED.alertEmails} and event_id >= ${p.from ?? ''} and event_id < ${p.to}) as owed`);
  return row.owed;
}

async function isPartition(db: Database, table: string): Promise<boolean> {
  const [row] = await db.execute<{ attached: boolean }>(sql`
    select exists (select 1 from pg_inherits i join pg_class c on c.oid = i.inhrelid where c.relname = ${table} and not i.inhdetachpending) as attached`);
  return row.attached;
}

function boundsOf(table: (typeof TABLES)[number], p: HistoryPartition) {
  const id = (evt: string) => sql.raw(quoteLiteral(ID_PREFIX[table] + evt.slice(3)));
  return sql`for values from (${p.from === null ? sql.raw('MINVALUE') : id(p.from)}) to (${id(p.to)})`;
}

/**
 * Drops every month whose partitions hold only rows older than `eventDays` days and nothing owed.
 * A month found owed is kept and looked at again on the next run. The events partition goes
 * first: once it is detached no redelivery (of one event, or the bulk one, which requeues only
 * deliveries whose event it finds) can find the month's events and the relay cannot claim their
 * deliveries, so nothing can become owed after the second check; what became owed between
 * the first check and that detach puts the events partition back instead. A run cut short is
 * finished by the next (a half-finished detach is finalized, detached months are dropped).
 */
export async function dropExpiredPartitions(db: Database, now: Date, eventDays: number): Promise<DropResult> {
  const result: DropResult = { dropped: [], kept: [] };
  if (eventDays <= 0) return result;
  await finishInterruptedDetaches(db);
  await dropDetachedMonths(db, result);
  const cutoff = idAt('evt', new Date(now.getTime() - eventDays * 86_400_000));
  for (const p of await listHistoryPartitions(db)) {
    if (p.to > cutoff) break;
    const events = `events_${p.suffix}`;
    if (await isPartition(db, events)) {
      if (await owedIn(db, p)) {
        result.kept.push(p.suffix);
        continue;
      }
      await db.execute(sql`alter table events detach partition ${sql.identifier(events)} concurrently`);
    }
    if (await owedIn(db, p)) {
      await db.execute(sql`alter table events attach partition ${sql.identifier(events)} ${boundsOf('events', p)}`);
      result.kept.push(p.suffix);
      continue;
    }
    for (const table of ['webhook_deliveries', 'webhook_attempts'] as const) {
      const name = `${table}_${p.suffix}`;
      if (await isPartition(db, name)) await db.execute(sql`alter table ${sql.identifier(table)} detach partition ${sql.identifier(name)} concurrently`);
    }
    await dropMonth(db, p.suffix, p);
    result.dropped.push(p.suffix);
  }
  return result;
}

/** The month's three tables (detached) and its alert e-mail rows, in one transaction. */
async function dropMonth(db: Database, suffix: string, p: HistoryPartition | null): Promise<void> {
  await db.transaction(async (tx) => {
    if (p) await tx.execute(sql`delete from alert_emails where event_id >= ${p.from ?? ''} and event_id < ${p.to}`);
    for (const table of TABLES) await tx.execute(sql`drop table if exists ${sql.identifier(`${table}_${suffix}`)}`);
  });
}

/** Months whose deliveries' partition was detached by a run that stopped before dropping it (checked then). */
async function dropDetachedMonths(db: Database, result: DropResult): Promise<void> {
  const rows = await db.execute<{ name: string }>(sql`
    select c.relname as name from pg_class c
     where c.relkind = 'r' and c.relname ~ '^webhook_deliveries_(p[0-9]{6}|before_partitioning)$'
       and not exists (select 1 from pg_inherits i where i.inhrelid = c.oid)`);
  for (const r of rows) {
    const suffix = r.name.replace(/^webhook_deliveries_/, '');
    await dropMonth(db, suffix, null);
    result.dropped.push(suffix);
  }
}

/** A DETACH … CONCURRENTLY cut short (the worker stopped) leaves the partition half-detached: finish it. */
async function finishInterruptedDetaches(db: Database): Promise<void> {
  const pending = await db.execute<{ parent: string; child: string }>(sql`
    select p.relname as parent, c.relname as child
      from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
     where i.inhdetachpending and p.relname in ('events', 'webhook_deliveries', 'webhook_attempts')`);
  for (const r of pending) await db.execute(sql`alter table ${sql.identifier(r.parent)} detach partition ${sql.identifier(r.child)} finalize`);
}

function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/**
 * The first id (events) above the partition of the rows from before partitioning, null without
 * one. An event from before has its deliveries anywhere below it (a delivery made by a
 * redelivery, before the migration, carries its own time); a later event's deliveries carry its
 * time exactly. Read from the catalog each time (an index lookup): a cache would be module state,
 * and a process may serve more than one database (the tests' contexts do).
 */
export async function beforePartitioningBound(db: DbOrTx): Promise<string | null> {
  const [row] = await db.execute<{ bound: string }>(sql`
    select pg_get_expr(c.relpartbound, c.oid) as bound from pg_class c where c.relname = 'events_before_partitioning' and c.relispartition`);
  return row ? (/TO \('([^']*)'\)/.exec(row.bound)?.[1] ?? null) : null;
}

/**
 * The id range of the deliveries of these events, for a lookup by event_id to keep to their
 * months: from a day of clock skew before the oldest event, to the newest event's time (or the
 * end of the rows from before partitioning, for events from then).
 */
export async function deliveryIdsOfEvents(db: DbOrTx, eventIds: string[]): Promise<{ from: string; below: string }> {
  const sorted = [...eventIds].sort();
  const bound = await beforePartitioningBound(db);
  const newest = sorted[sorted.length - 1];
  const after = idAfter('whd', newest);
  const below = bound !== null && newest < bound ? `whd${bound.slice(3)}` : after;
  return { from: idFloorAfter('whd', sorted[0]), below: below > after ? below : after };
}
