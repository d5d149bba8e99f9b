import { and, asc, count, desc, eq, exists, gte, inArray, isNull, lt, sql, type SQL } from 'drizzle-orm';
import { sortedBy } from '../platform/list-order';
import type { DbOrTx, Tx } from '../../db/client';
import { events, webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema';
import { AppError, notFound } from '../platform/errors';
import { newIdInTimeOf } from '../platform/ids';
import { deliveryIdsOfEvents } from '../maintenance/history-partitions';
import type { Caller } from '../organizations/organizations';
import { emitEvent } from '../events/events';
import type { DeliveryJob } from './delivery-types';
import { fanOutEvents } from './relay';
import type { WebhookDeps } from './endpoints';
import { paginate } from '../platform/sql-fragments';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface AttemptView {
  attemptNumber: number;
  startedAt: Date;
  /** succeeded (2xx), failed, or interrupted (the worker stopped mid-attempt: no result). */
  outcome: 'succeeded' | 'failed' | 'interrupted';
  /** Null for an interrupted attempt. */
  durationMs: number | null;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
}

export interface DeliveryView {
  id: string;
  endpointId: string;
  url: string;
  status: DeliveryStatus;
  attemptCount: number;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  deliveredAt: Date | null;
  attempts: AttemptView[];
}

export interface WebhookEventView {
  id: string;
  type: string;
  createdAt: Date;
  data: unknown;
  /** When the relay fanned it out to deliveries (null: not yet). */
  dispatchedAt: Date | null;
  deliveries: DeliveryView[];
}

export const EVENT_SORT_FIELDS = ['createdAt', 'type'] as const;

export interface EventListQuery {
  page: number;
  limit: number;
  sortBy?: (typeof EVENT_SORT_FIELDS)[number];
  sortOrder?: 'asc' | 'desc';
  type?: string;
  status?: DeliveryStatus;
  endpointId?: string;
  /** Events about this order (their data's orderId): an order's completion or expiry. */
  orderId?: string;
}

/**
 * The organization's events, newest first, each with its delivery state per endpoint and every
 * attempt. `status` and `endpointId` keep events having a delivery in that state / to that endpoint.
 */
export async function listWebhookEvents(db: DbOrTx, caller: Caller, q: EventListQuery): Promise<{ items: WebhookEventView[]; total: number }> {
  const conditions: SQL[] = [eq(events.organizationId, caller.organizationId)];
  if (q.type) conditions.push(eq(events.type, q.type));
  // The predicate and expression of events_order_idx (0013_order_reference_search.sql).
  if (q.orderId) conditions.push(sql`${events.data} ? 'orderId'`, sql`${events.data}->>'orderId' = ${q.orderId}`);
  if (q.status || q.endpointId) {
    const sub: SQL[] = [eq(webhookDeliveries.eventId, events.id)];
    if (q.status) sub.push(eq(webhookDeliveries.status, q.status));
    if (q.endpointId) sub.push(eq(webhookDeliveries.endpointId, q.endpointId));
    conditions.push(exists(db.select({ one: webhookDeliveries.id }).from(webhookDeliveries).where(and(...sub))));
  }
  const where = and(...conditions);
  const [{ n }] = await db.select({ n: count() }).from(events).where(where);
  const rows = await paginate(
    db
      .select()
      .from(events)
      .where(where)
      .orderBy(...sortedBy(q.sortOrder ?? 'desc', q.sortBy === 'type' ? events.type : events.createdAt, events.id))
      .$dynamic(),
    q,
  );
  return { items: await withDeliveries(db, rows), total: Number(n) };
}

/** Keeps a lookup of deliveries by event to the events' months (history partitions, db/migrations/0014). */
function inDeliveryIdRange(range: { from: string; below: string }): SQL[] {
  return [gte(webhookDeliveries.id, range.from), lt(webhookDeliveries.id, range.below)];
}

async function withDeliveries(db: DbOrTx, rows: (typeof events.$inferSelect)[]): Promise<WebhookEventView[]> {
  if (rows.length === 0) return [];
  const deliveries = await db
    .select({ d: webhookDeliveries, url: webhookEndpoints.url })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(and(inArray(webhookDeliveries.eventId, rows.map((r) => r.id)), ...inDeliveryIdRange(await deliveryIdsOfEvents(db, rows.map((r) => r.id)))))
    .orderBy(asc(webhookDeliveries.createdAt), asc(webhookDeliveries.id));
  const attempts = deliveries.length
    ? await db
        .select()
        .from(webhookAttempts)
        .where(inArray(webhookAttempts.deliveryId, deliveries.map((x) => x.d.id)))
        .orderBy(asc(webhookAttempts.attemptNumber), asc(webhookAttempts.id))
    : [];
  return rows.map((e) => ({
    id: e.id,
    type: e.type,
    createdAt: e.createdAt,
    data: e.data,
    dispatchedAt: e.dispatchedAt,
    deliveries: deliveries
      .filter((x) => x.d.eventId === e.id)
      .map(({ d, url }) => ({
        id: d.id,
        endpointId: d.endpointId,
        url,
        status: d.status,
        attemptCount: d.attemptCount,
        nextAttemptAt: d.nextAttemptAt,
        lastAttemptAt: d.lastAttemptAt,
        deliveredAt: d.deliveredAt,
        attempts: attempts
          .filter((a) => a.deliveryId === d.id)
          .map((a) => ({
            attemptNumber: a.attemptNumber,
            startedAt: a.startedAt,
            outcome: a.outcome,
            durationMs: a.durationMs,
            statusCode: a.statusCode,
            error: a.error,
            responseExcerpt: a.responseExcerpt,
          })),
      })),
  }));
}

export async function getWebhookEvent(db: DbOrTx, caller: Caller, eventId: string): Promise<WebhookEventView> {
  const rows = await db.select().from(events).where(and(eq(events.id, eventId), eq(events.organizationId, caller.organizationId)));
  if (rows.length === 0) throw notFound('Event');
  return (await withDeliveries(db, rows))[0];
}

/**
 * Redelivers an event by hand: to every endpoint it was delivered (or attempted) to, or to one
 * endpoint (which gets a delivery even if it had none, e.g. it was created after the event).
 * Each delivery becomes pending and due now, and its retry schedule starts again.
 * Disabled or deleted endpoints are skipped (409 when nothing is left).
 */
export async function redeliverWebhookEvent(
  deps: WebhookDeps,
  caller: Caller,
  eventId: string,
  input: { endpointId?: string },
): Promise<{ event: WebhookEventView; jobs: DeliveryJob[] }> {
  const jobs = await deps.db.transaction(async (tx) => {
    const [event] = await tx.select().from(events).where(and(eq(events.id, eventId), eq(events.organizationId, caller.organizationId)));
    if (!event) throw notFound('Event');
    const now = deps.clock.now();
    if (input.endpointId) {
      const [ep] = await tx
        .select()
        .from(webhookEndpoints)
        .where(and(eq(webhookEndpoints.id, input.endpointId), eq(webhookEndpoints.organizationId, caller.organizationId), isNull(webhookEndpoints.deletedAt)));
      if (!ep) throw notFound('Webhook endpoint');
      if (!ep.enabled) throw new AppError('CONFLICT', 'This webhook endpoint is disabled; re-enable it (PUT enabled: true) first');
      await tx
        .insert(webhookDeliveries)
        .values({ id: newIdInTimeOf('whd', eventId), organizationId: caller.organizationId, eventId, endpointId: ep.id, status: 'failed', nextAttemptAt: null, createdAt: now })
        .onConflictDoNothing();
    }
    const targets = await tx
      .select({ id: webhookDeliveries.id, attemptCount: webhookDeliveries.attemptCount })
      .from(webhookDeliveries)
      .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
      .where(
        and(
          eq(webhookDeliveries.eventId, eventId),
          ...inDeliveryIdRange(await deliveryIdsOfEvents(tx, [eventId])),
          eq(webhookEndpoints.enabled, true),
          isNull(webhookEndpoints.deletedAt),
          ...(input.endpointId ? [eq(webhookDeliveries.endpointId, input.endpointId)] : []),
        ),
      )
      .for('update', { of: webhookDeliveries });
    if (targets.length === 0) throw new AppError('CONFLICT', 'This event has no enabled endpoint to redeliver to');
    const out: DeliveryJob[] = [];
    for (const t of targets) {
      await tx
        .update(webhookDeliveries)
        .set({ status: 'pending', nextAttemptAt: now, retryBase: t.attemptCount, deliveredAt: null })
        .where(eq(webhookDeliveries.id, t.id));
      out.push({ deliveryId: t.id, attempt: t.attemptCount + 1, delayMs: 0 });
    }
    return out;
  });
  return { event: await getWebhookEvent(deps.db, caller, eventId), jobs };
}

/**
 * A `webhook.test` event for one endpoint only (merchants check their receiver with it): emitted
 * in targeted mode and fanned out in the same transaction, so it is answered with its delivery
 * and the relay never sees it (nor would it send it anywhere else).
 */
export async function sendTestWebhook(deps: WebhookDeps, caller: Caller, endpointId: string): Promise<{ event: WebhookEventView; jobs: DeliveryJob[] }> {
  const emitted = await deps.db.transaction(async (tx) => {
    const [ep] = await tx
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.organizationId, caller.organizationId), isNull(webhookEndpoints.deletedAt)));
    if (!ep) throw notFound('Webhook endpoint');
    if (!ep.enabled) throw new AppError('CONFLICT', 'This webhook endpoint is disabled; re-enable it (PUT enabled: true) first');
    const event = await emitEvent(tx, {
      organizationId: caller.organizationId,
      type: 'webhook.test',
      targetEndpointId: endpointId,
      data: { endpointId, message: 'Test event from Stablegate: your receiver is reachable and verifies signatures.' },
      createdAt: deps.clock.now(),
    });
    const jobs = await fanOutEvents(tx, deps, [{ ...event, aboutEndpointId: null }]);
    return { eventId: event.id, jobs };
  });
  return { event: await getWebhookEvent(deps.db, caller, emitted.eventId), jobs: emitted.jobs };
}

/**
 * Deliveries one bulk redelivery requeues at most: a long outage leaves many, and one request
 * should neither hold a transaction over all of them nor put them all in the queue at once.
 */
export const REDELIVER_FAILED_AT_ONCE = 1_000;

/** The caller's endpoint, to send to it now: 404 when it is not theirs, 409 when disabled. */
async function enabledEndpointOf(tx: Tx, caller: Caller, endpointId: string) {
  const [ep] = await tx
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.organizationId, caller.organizationId), isNull(webhookEndpoints.deletedAt)));
  if (!ep) throw notFound('Webhook endpoint');
  if (!ep.enabled) throw new AppError('CONFLICT', 'This webhook endpoint is disabled; re-enable it first');
  return ep;
}

/**
 * Redelivers, to one endpoint, the deliveries that failed since a time (its last attempt, or its
 * creation when it never had one, at or after `since`), the oldest first and at most
 * REDELIVER_FAILED_AT_ONCE of them (`more`: others wait for the next request). Each becomes pending
 * and due now with a fresh retry schedule, as redeliverWebhookEvent does for one event; the events'
 * ids (the receiver's deduplication keys) are unchanged. A delivery requeued by a concurrent
 * request is no longer failed and is not requeued twice. A delivery whose event has left the
 * history (its month is being dropped) is not requeued.
 */
export async function redeliverFailedSince(
  deps: WebhookDeps,
  caller: Caller,
  endpointId: string,
  since: Date,
): Promise<{ count: number; more: boolean; jobs: DeliveryJob[] }> {
  return deps.db.transaction(async (tx) => {
    const ep = await enabledEndpointOf(tx, caller, endpointId);
    const failedSince = and(
      eq(webhookDeliveries.endpointId, ep.id),
      eq(webhookDeliveries.organizationId, caller.organizationId),
      eq(webhookDeliveries.status, 'failed'),
      sql`coalesce(${webhookDeliveries.lastAttemptAt}, ${webhookDeliveries.createdAt}) >= ${since.toISOString()}::timestamptz`,
      // Only while its event is in the history: a month being dropped has its events detached
      // first, and a delivery made pending after the dropper's last look would go with the month
      // (core/maintenance/history-partitions.ts). Reading events makes the detach wait for this.
      exists(tx.select({ one: sql`1` }).from(events).where(eq(events.id, webhookDeliveries.eventId))),
    );
    const oldest = await tx
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(failedSince)
      .orderBy(sql`coalesce(${webhookDeliveries.lastAttemptAt}, ${webhookDeliveries.createdAt})`, asc(webhookDeliveries.id))
      .limit(REDELIVER_FAILED_AT_ONCE + 1);
    const batch = oldest.slice(0, REDELIVER_FAILED_AT_ONCE).map((r) => r.id);
    if (batch.length === 0) return { count: 0, more: false, jobs: [] };
    const now = deps.clock.now();
    const requeued = await tx
      .update(webhookDeliveries)
      .set({ status: 'pending', nextAttemptAt: now, retryBase: sql`${webhookDeliveries.attemptCount}`, deliveredAt: null })
      .where(and(inArray(webhookDeliveries.id, batch), failedSince))
      .returning({ id: webhookDeliveries.id, attemptCount: webhookDeliveries.attemptCount });
    return {
      count: requeued.length,
      more: oldest.length > REDELIVER_FAILED_AT_ONCE,
      jobs: requeued.map((d) => ({ deliveryId: d.id, attempt: d.attemptCount + 1, delayMs: 0 })),
    };
  });
}

/**
 * Deliveries to the endpoint still being retried: at least one attempt failed and the next is
 * scheduled (status pending). They are not "failed" until the schedule is spent, so "redeliver
 * failed" does not take them (issue 40: an endpoint whose every attempt failed answered "No
 * delivery failed"); sendRetryingNow does.
 */
export async function retryingDeliveries(db: DbOrTx, caller: Caller, endpointId: string): Promise<{ count: number; nextAttemptAt: Date | null }> {
  const [row] = await db
    .select({ count: count(), nextAttemptAt: sql<string | null>`min(${webhookDeliveries.nextAttemptAt})` })
    .from(webhookDeliveries)
    .where(retryingOf(db, caller, endpointId));
  return { count: row.count, nextAttemptAt: row.nextAttemptAt === null ? null : new Date(row.nextAttemptAt) };
}

const retryingOf = (db: DbOrTx, caller: Caller, endpointId: string): SQL =>
  and(
    eq(webhookDeliveries.endpointId, endpointId),
    eq(webhookDeliveries.organizationId, caller.organizationId),
    eq(webhookDeliveries.status, 'pending'),
    sql`${webhookDeliveries.attemptCount} > 0`,
    // Its last attempt has ended (recorded): one in flight keeps its lease, and sending it now would
    // start a second attempt beside it.
    exists(
      db
        .select({ one: sql`1` })
        .from(webhookAttempts)
        .where(and(eq(webhookAttempts.deliveryId, webhookDeliveries.id), eq(webhookAttempts.attemptNumber, webhookDeliveries.attemptCount))),
    ),
  )!;

/**
 * The endpoint's retrying deliveries (retryingDeliveries) due now instead of at their scheduled
 * time, a bounded batch at a time, oldest schedule first. Their retry schedule goes on from where
 * it was (a failure now waits the next step of it); the jobs returned are the same attempts the
 * schedule would have run (same deterministic job ids), so the caller promotes the waiting ones
 * rather than adding a second. Only while the event is in the history, as redeliverFailedSince.
 */
export async function sendRetryingNow(deps: WebhookDeps, caller: Caller, endpointId: string): Promise<{ count: number; more: boolean; jobs: DeliveryJob[] }> {
  return deps.db.transaction(async (tx) => {
    const ep = await enabledEndpointOf(tx, caller, endpointId);
    const retrying = and(retryingOf(tx, caller, ep.id), exists(tx.select({ one: sql`1` }).from(events).where(eq(events.id, webhookDeliveries.eventId))));
    const oldest = await tx
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(retrying)
      .orderBy(asc(webhookDeliveries.nextAttemptAt), asc(webhookDeliveries.id))
      .limit(REDELIVER_FAILED_AT_ONCE + 1);
    const batch = oldest.slice(0, REDELIVER_FAILED_AT_ONCE).map((r) => r.id);
    if (batch.length === 0) return { count: 0, more: false, jobs: [] };
    const sent = await tx
      .update(webhookDeliveries)
      .set({ nextAttemptAt: deps.clock.now() })
      .where(and(inArray(webhookDeliveries.id, batch), retrying))
      .returning({ id: webhookDeliveries.id, attemptCount: webhookDeliveries.attemptCount });
    return {
      count: sent.length,
      more: oldest.length > REDELIVER_FAILED_AT_ONCE,
      jobs: sent.map((d) => ({ deliveryId: d.id, attempt: d.attemptCount + 1, delayMs: 0 })),
    };
  });
}
