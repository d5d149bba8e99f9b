import { sql } from 'drizzle-orm';
import type { Database } from '../../db/client';

/**
 * Tables used like queues: work is taken from the head of a partial index (available pool
 * addresses, pending orders and transfers, undispatched events, due deliveries), and every row
 * taken leaves a dead entry at that head which each later scan steps over until VACUUM removes it.
 * Without VACUUM those scans slow down steadily, and autovacuum's defaults wait for a fifth of a
 * table to be dead (the figures are in scripts/bench/FINDINGS.md).
 */
export const QUEUE_TABLES = ['pool_addresses', 'orders', 'transfers', 'events', 'webhook_deliveries'] as const;
export type QueueTable = (typeof QUEUE_TABLES)[number];

/**
 * Vacuums each queue table with at least `minDeadRows` dead rows (Postgres' own count), index
 * entries included (VACUUM may skip index cleanup when few heap pages hold dead rows, which are
 * exactly the ones at the heads of these indexes). SKIP_LOCKED: a table another vacuum holds is
 * left for the next run. Returns the tables vacuumed.
 */
export async function vacuumQueueTables(db: Database, options: { minDeadRows: number }): Promise<QueueTable[]> {
  const rows = await db.execute<{ relname: QueueTable; dead: string | number }>(sql`
    select relname, n_dead_tup as dead from pg_stat_user_tables
    where schemaname = current_schema() and relname in (${sql.join(QUEUE_TABLES.map((t) => sql`${t}`), sql`, `)})`);
  const vacuumed: QueueTable[] = [];
  for (const { relname, dead } of rows) {
    if (Number(dead) < options.minDeadRows || !QUEUE_TABLES.includes(relname)) continue;
    // VACUUM cannot run inside a transaction block; this is a statement of its own.
    await db.execute(sql.raw(`vacuum (skip_locked, index_cleanup on) "${relname}"`));
    vacuumed.push(relname);
  }
  return vacuumed;
}
