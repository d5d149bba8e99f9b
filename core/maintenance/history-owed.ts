import { sql, type SQL } from 'drizzle-orm';

/**
 * What the delivery history still owes: the one rule both ways of removing history keep to, row by
 * row (history-retention.ts, the rows from before partitioning) and a month at a time
 * (history-partitions.ts). An event is owed while it is not yet fanned out, while a delivery of it
 * is pending (a retry may still come) and while an alert e-mail of it is still to be sent; what is
 * owed is never removed. Each predicate reads only its own table's columns, unqualified, so it holds
 * for the parent table, one month's partition (attached or detached) and rows read under lock alike.
 */
export const OWED = {
  events: sql`dispatched_at is null`,
  webhookDeliveries: sql`status = 'pending'`,
  alertEmails: sql`status = 'pending'`,
} as const satisfies Record<string, SQL>;
