import { sql } from 'drizzle-orm';
import type { Database } from '../../db/client';

/**
 * The list counts' triggers add into a row per writing backend (db/migrations/0016_list_counts.sql),
 * so every connection that ever wrote leaves rows each count sums. Folding adds them into slot 0
 * and deletes them: the count is unchanged (one statement), the rows to sum stay few. Rows a
 * writer holds are skipped (SKIP LOCKED): folding never waits on a writer nor makes one wait long,
 * and a writer never touches slot 0, so the two cannot deadlock. Returns the rows folded.
 */
export async function foldListCounts(db: Database): Promise<number> {
  let folded = 0;
  for (const table of ['order_counts', 'transfer_counts'] as const) {
    const t = sql.identifier(table);
    const rows = await db.execute<{ n: string }>(sql`
      with taken as (
        select organization_id, status, day, slot from ${t} where slot <> 0 for update skip locked
      ), gone as (
        delete from ${t} c using taken
        where c.organization_id = taken.organization_id and c.status = taken.status and c.day = taken.day and c.slot = taken.slot
        returning c.organization_id, c.status, c.day, c.n
      ), added as (
        insert into ${t} (organization_id, status, day, slot, n)
        select organization_id, status, day, 0, sum(n) from gone group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, status, day, slot) do update set n = ${t}.n + excluded.n
      )
      select count(*)::text as n from gone`);
    folded += Number(rows[0]?.n ?? 0);
  }
  return folded;
}
