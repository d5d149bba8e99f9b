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

/**
 * Vacuums each queue table with at least `minDeadRows` dead rows (Postgres' own count), index
 * entries included (VACUUM may skip index cleanup when few heap pages hold dead rows, which are
 * exactly the ones at the heads of these indexes). A partitioned one (events, webhook deliveries:
 * core/maintenance/history-partitions.ts) is vacuumed partition by partition: Postgres counts dead
 * rows per partition and none on the parent, and a month's partition is where its relay's heads
 * are (vacuuming the parent would read a year of months). SKIP_LOCKED: a table another vacuum
 * holds is left for the next run. Returns the tables (partitions) vacuumed.
 */
export async function vacuumQueueTables(db: Database, options: { minDeadRows: number }): Promise<string[]> {
  const rows = await db.execute<{ relname: string; dead: string | number }>(sql`
    select s.relname, s.n_dead_tup as dead
      from pg_stat_user_tables s
      join pg_class c on c.oid = s.relid and c.relkind = 'r'
      left join pg_inherits i on i.inhrelid = s.relid
      left join pg_class parent on parent.oid = i.inhparent
     where s.schemaname = current_schema()
       and coalesce(parent.relname, s.relname) in (${sql.join(QUEUE_TABLES.map((t) => sql`${t}`), sql`, `)})
       and s.n_dead_tup >= ${options.minDeadRows}
     order by s.n_dead_tup desc`);
  const vacuumed: string[] = [];
  for (const { relname } of rows) {
    // VACUUM cannot run inside a transaction block; this is a statement of its own.
    await db.execute(sql`vacuum (skip_locked, index_cleanup on) ${sql.identifier(relname)}`);
    vacuumed.push(relname);
  }
  return vacuumed;
}
