import { getTableColumns, type Table } from 'drizzle-orm';

/**
 * A row returned by a hand-written statement (`returning *`, snake_case driver values) in the
 * shape drizzle's own queries give (camelCase, mapped through each column's type).
 */
export function rowFromDriver<T extends Table>(table: T, raw: Record<string, unknown>): T['$inferSelect'] {
  const row: Record<string, unknown> = {};
  for (const [property, column] of Object.entries(getTableColumns(table))) {
    const value = raw[column.name];
    row[property] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as T['$inferSelect'];
}
