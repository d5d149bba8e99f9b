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
