import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { orderCounts, transferCounts } from '../../db/schema';

/**
 * Exact totals of the order and transfer lists without counting rows: an organization's rows per
 * status are counted by triggers in the writing transaction (db/migrations/0016_list_counts.sql),
 * so reading a total sums a few counter rows however many orders there are.
 */
export type CountedList = 'orders' | 'transfers';

const TABLES = { orders: orderCounts, transfers: transferCounts } as const;

/** How many of the organization's rows (of one status, when given) the list holds, exactly. */
export async function countedTotal(db: DbOrTx, list: CountedList, organizationId: string, status?: string): Promise<number> {
  const t = TABLES[list];
  const [row] = await db
    .select({ total: sql<string | null>`sum(${t.n})` })
    .from(t)
    .where(and(eq(t.organizationId, organizationId), status === undefined ? undefined : eq(t.status, status)));
  return Number(row?.total ?? 0);
}

/** Where an offset page in created_at order starts: the rows to skip from `from` on, in the list's order. */
export interface DayStart {
  /** Descending: rows created before this moment (the end of the page's first day); ascending: from it on (that day's start). */
  from: Date;
  /** Rows of the list between `from` and the page's first row. */
  skip: number;
}

const DAY_MS = 86_400_000;

/**
 * The day of an offset page's first row in created_at order, from the counts per day: the offset
 * minus the rows of the days before it in the list's order (newer days when descending, older when
 * ascending). The page is then read from that day's edge, skipping fewer rows than a day holds
 * however deep the page. Null when the offset is past the last row.
 */
export async function dayOfOffset(
  db: DbOrTx,
  list: CountedList,
  organizationId: string,
  status: string | undefined,
  sortOrder: 'asc' | 'desc',
  offset: number,
): Promise<DayStart | null> {
  const t = TABLES[list];
  const days = db
    .select({ day: t.day, n: sql<string>`sum(${t.n})`.as('n') })
    .from(t)
    .where(and(eq(t.organizationId, organizationId), status === undefined ? undefined : eq(t.status, status)))
    .groupBy(t.day)
    .as('days');
  const direction = sortOrder === 'desc' ? sql`desc` : sql`asc`;
  const before = sql<string>`coalesce(sum(${days.n}) over (order by ${days.day} ${direction} rows between unbounded preceding and 1 preceding), 0)`;
  const ranked = db.select({ day: days.day, n: days.n, before: before.as('before') }).from(days).as('ranked');
  const [found] = await db
    .select({ day: ranked.day, before: ranked.before })
    .from(ranked)
    .where(sql`${ranked.before} <= ${offset} and ${ranked.before} + ${ranked.n} > ${offset}`)
    .limit(1);
  if (!found) return null;
  const dayStart = Date.parse(`${found.day}T00:00:00.000Z`);
  return { from: new Date(sortOrder === 'desc' ? dayStart + DAY_MS : dayStart), skip: offset - Number(found.before) };
}
