import { sql, type AnyColumn, type SQL } from 'drizzle-orm';
import type { PgSelect } from 'drizzle-orm/pg-core';

/** `%`, `_` and `\` taken literally in a LIKE pattern (escape character `\`, Postgres's default). */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A page of a list: 1-based page number and its size (bounded by the request schema). */
export interface PageRequest {
  page: number;
  limit: number;
}

function offsetOf(page: PageRequest): number {
  return (page.page - 1) * page.limit;
}

/** A select cut to one page (drizzle's dynamic query: pass `query.$dynamic()`). */
export function paginate<T extends PgSelect>(query: T, page: PageRequest): T {
  return query.limit(page.limit).offset(offsetOf(page)) as T;
}

/** The same page of a list already in memory. */
export function pageOf<T>(items: readonly T[], page: PageRequest): T[] {
  const from = offsetOf(page);
  return items.slice(from, from + page.limit);
}

/**
 * Amounts of different tokens compared at face value: base units scaled to the largest decimals
 * of the tokens given (so 1 DAI, 18 decimals, equals 1 USDT, 6 decimals), in exact numeric
 * arithmetic; an amount of a token not given is left as it is. Pass every token the registry
 * knows (not only this network's), so rows written under another NETWORK sort right too.
 */
export function faceValueSql(
  columns: { amount: AnyColumn; chainId: AnyColumn; currency: AnyColumn },
  tokens: readonly { chainId: string; currency: string; decimals: number }[],
): SQL {
  if (tokens.length === 0) return sql`${columns.amount}`;
  const max = Math.max(0, ...tokens.map((t) => t.decimals));
  const cases = tokens.map(
    (t) => sql`when ${columns.chainId} = ${t.chainId} and ${columns.currency} = ${t.currency} then ${columns.amount} * ${sql.raw(`1${'0'.repeat(max - t.decimals)}`)}::numeric`,
  );
  return sql`(case ${sql.join(cases, sql` `)} else ${columns.amount} end)`;
}
