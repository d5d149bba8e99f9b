import { getTableColumns, type Column, type Table } from 'drizzle-orm';

/** Each table's [property, column] pairs, listed once rather than on every row. */
const columnsOfTable = new WeakMap<Table, [string, Column][]>();

function columnsOf(table: Table): [string, Column][] {
  let columns = columnsOfTable.get(table);
  if (!columns) {
    columns = Object.entries(getTableColumns(table));
    columnsOfTable.set(table, columns);
  }
  return columns;
}

/**
 * A row returned by a hand-written statement (`returning *`, snake_case driver values) in the
 * shape drizzle's own queries give (camelCase, mapped through each column's type).
 */
export function rowFromDriver<T extends Table>(table: T, raw: Record<string, unknown>): T['$inferSelect'] {
  const row: Record<string, unknown> = {};
  for (const [property, column] of columnsOf(table)) {
    const value = raw[column.name];
    row[property] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as T['$inferSelect'];
}
