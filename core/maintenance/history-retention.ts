import { sql } from 'drizzle-orm';
import type { Database } from '../../db/client';
import { idAt } from '../platform/ids';
import { beforePartitioningBound } from './history-partitions';
import { OWED } from './history-owed';

/**
 * Retention of the delivery history: events with their webhook deliveries and attempts (about
 * payments × endpoints × attempts rows), deleted once older than the window. An event is kept while
 * anything of it is still owed (history-owed.ts: not yet fanned out, a delivery pending, an alert
 * e-mail to send). Orders, transfers, deposits and references are never
 * deleted. Idempotency records expire on their own (core/platform/idempotency.ts, 24 hours as the
 * spec says); scanned-block records are kept only within the reorg window by the scan itself
 * (core/detection/scan.ts).
 *
 * Since the history is partitioned by month (db/migrations/0014), whole months are dropped
 * instead (core/maintenance/history-partitions.ts); this deletes row by row only within the
 * partition of the rows from before partitioning, so an installation's old history goes on
 * shrinking from the day it upgrades, and the partition is dropped once it is past the window.
 *
 * Deleted in small transactions, oldest first, found through the primary key: event ids are
 * time-ordered ULIDs (`evt_<ulid>`), so "older than the window" is an id range on the primary key
 * index (no extra index on a hot table, no scan of what is kept). Each batch locks only the rows it
 * deletes (SKIP LOCKED on the events; the deliveries are re-read under lock), so the hot paths never
 * wait on it for longer than one batch's delete of their own rows, which they never touch anyway.
 */
export interface RetentionOptions {
  /** Events (and their deliveries and attempts) older than this many days go; 0 keeps them forever. */
  eventDays: number;
  /** Events per transaction. */
  batchSize: number;
  /** Stops after this many batches (the next run goes on): one run never holds a worker for long. */
  maxBatches: number;
}

export interface RetentionResult {
  events: number;
  deliveries: number;
  attempts: number;
  alertEmails: number;
}

export async function pruneHistory(db: Database, now: Date, options: RetentionOptions): Promise<RetentionResult> {
  const total: RetentionResult = { events: 0, deliveries: 0, attempts: 0, alertEmails: 0 };
  if (options.eventDays <= 0) return total;
  const cutoff = new Date(now.getTime() - options.eventDays * 86_400_000);
  // Row by row only among the rows from before partitioning: later months are dropped whole
  // (core/maintenance/history-partitions.ts), deleting their rows first would only cost more.
  const upper = await beforePartitioningBound(db);
  if (upper === null) return total;
  const windowId = idAt('evt', cutoff);
  const cutoffId = windowId < upper ? windowId : upper;
  // A keyset cursor: events kept (something still owed) are stepped over, never read again this run.
  let after = '';
  for (let batch = 0; batch < options.maxBatches; batch++) {
    const removed = await pruneEventBatch(db, cutoff, cutoffId, after, options.batchSize);
    after = removed.last;
    total.events += removed.events;
    total.deliveries += removed.deliveries;
    total.attempts += removed.attempts;
    total.alertEmails += removed.alertEmails;
    if (removed.scanned < options.batchSize) break;
  }
  return total;
}

interface BatchResult extends RetentionResult {
  scanned: number;
  /** The newest event id the batch looked at: the next batch starts after it. */
  last: string;
}

async function pruneEventBatch(db: Database, cutoff: Date, cutoffId: string, after: string, batchSize: number): Promise<BatchResult> {
  return db.transaction(async (tx) => {
    // Candidates, oldest first; SKIP LOCKED: an event another transaction holds waits for the next run.
    const candidates = await tx.execute<{ id: string }>(sql`
      select e.id from events e
      where e.id > ${after} and e.id < ${cutoffId} and e.created_at < ${cutoff.toISOString()}::timestamptz and not (${OWED.events})
      order by e.id
      limit ${batchSize}
      for update of e skip locked`);
    const scanned = candidates.length;
    if (scanned === 0) return { scanned, last: after, events: 0, deliveries: 0, attempts: 0, alertEmails: 0 };
    const ids = candidates.map((r) => r.id);
    const last = ids[ids.length - 1];
    // The deliveries under lock: one retried by hand meanwhile is seen pending here (read
    // committed re-reads the row after the lock), and its event is kept.
    const deliveries = await tx.execute<{ id: string; event_id: string; owed: boolean }>(sql`
      select id, event_id, ${OWED.webhookDeliveries} as owed from webhook_deliveries where event_id in ${ids} for update`);
    const keep = new Set(deliveries.filter((d) => d.owed).map((d) => d.event_id));
    const owedMail = await tx.execute<{ event_id: string }>(sql`
      select event_id from alert_emails where event_id in ${ids} and ${OWED.alertEmails}`);
    for (const m of owedMail) keep.add(m.event_id);
    const doomedEvents = ids.filter((id) => !keep.has(id));
    const doomedDeliveries = deliveries.filter((d) => !keep.has(d.event_id)).map((d) => d.id);
    if (doomedEvents.length === 0) return { scanned, last, events: 0, deliveries: 0, attempts: 0, alertEmails: 0 };
    const attempts = doomedDeliveries.length
      ? await tx.execute(sql`delete from webhook_attempts where delivery_id in ${doomedDeliveries}`)
      : { count: 0 };
    if (doomedDeliveries.length) await tx.execute(sql`delete from webhook_deliveries where id in ${doomedDeliveries}`);
    const mails = await tx.execute(sql`delete from alert_emails where event_id in ${doomedEvents}`);
    await tx.execute(sql`delete from events where id in ${doomedEvents}`);
    return {
      scanned,
      last,
      events: doomedEvents.length,
      deliveries: doomedDeliveries.length,
      attempts: Number((attempts as { count?: number }).count ?? 0),
      alertEmails: Number((mails as { count?: number }).count ?? 0),
    };
  });
}
