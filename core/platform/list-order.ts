import { asc, desc, type AnyColumn, type SQL } from 'drizzle-orm';

/** ORDER BY a list's sortBy column in sortOrder, ties broken by the id in the same direction (stable pages). */
export function sortedBy(order: 'asc' | 'desc', column: AnyColumn | SQL, id: AnyColumn): SQL[] {
  const direction = order === 'asc' ? asc : desc;
  return [direction(column), direction(id)];
}
