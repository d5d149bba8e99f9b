import { and, asc, eq, inArray, isNull, lte, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client';
import { events, webhookDeliveries, webhookEndpoints } from '../../db/schema';
import { newIdInTimeOf } from '../platform/ids';
import type { DeliveryJob } from './delivery-types';
import type { WebhookDeps } from './endpoints';

/** Events fanned out per transaction, and at most this many batches per relay run. */
const FAN_OUT_BATCH = 500;
const FAN_OUT_BATCHES_PER_RUN = 20;
/** Due deliveries re-enqueued per relay run (those already queued are deduplicated by job id). */
const REQUEUE_BATCH = 1000;

/** What fan-out needs of an event row. */
export interface FanOutEvent {
  id: string;
  organizationId: string;
  type: string;
  createdAt: Date;
  /** Targeted mode: this endpoint only (webhook.test). */
  targetEndpointId: string | null;
  /** The endpoint an event is about, which never receives it (alert.webhook_endpoint_disabled). */
  aboutEndpointId: string | null;
}

/**
 * Who receives an event. A targeted event goes to its one endpoint if that is enabled (whatever
 * its subscriptions: it asked for it). Any other event goes to every endpoint of its organization
 * that is enabled, not deleted, subscribed to its type and was created no later than the event,
 * except the endpoint the event is about.
 */
function recipients(event: FanOutEvent, endpoints: { id: string; organizationId: string; events: string[]; createdAt: Date }[]) {
  return endpoints.filter((ep) => {
    if (ep.organizationId !== event.organizationId) return false;
    if (event.targetEndpointId !== null) return ep.id === event.targetEndpointId;
    return ep.id !== event.aboutEndpointId && ep.events.includes(event.type) && ep.createdAt.getTime() <= event.createdAt.getTime();
  });
}

/**
 * Fans events out to delivery rows and marks them dispatched, in the caller's transaction (the
 * caller holds the events' rows). Returns the first attempt's job of each delivery created.
 */
export async function fanOutEvents(tx: Tx, deps: WebhookDeps, pending: FanOutEvent[]): Promise<DeliveryJob[]> {
  if (pending.length === 0) return [];
  const now = deps.clock.now();
  const firstDelay = deps.config.webhooks.retryScheduleMs[0] ?? 0;
  const orgIds = [...new Set(pending.map((e) => e.organizationId))];
  const endpoints = await tx
    .select({ id: webhookEndpoints.id, organizationId: webhookEndpoints.organizationId, events: webhookEndpoints.events, createdAt: webhookEndpoints.createdAt })
    .from(webhookEndpoints)
    .where(and(inArray(webhookEndpoints.organizationId, orgIds), eq(webhookEndpoints.enabled, true), isNull(webhookEndpoints.deletedAt)));
  const rows = pending.flatMap((event) =>
    recipients(event, endpoints).map((ep) => ({
      id: newIdInTimeOf('whd', event.id),
      organizationId: event.organizationId,
      eventId: event.id,
      endpointId: ep.id,
      status: 'pending' as const,
      nextAttemptAt: new Date(now.getTime() + firstDelay),
      createdAt: now,
    })),
  );
  const created = rows.length ? await tx.insert(webhookDeliveries).values(rows).onConflictDoNothing().returning({ id: webhookDeliveries.id }) : [];
  await tx.update(events).set({ dispatchedAt: now }).where(inArray(events.id, pending.map((e) => e.id)));
  return created.map((d) => ({ deliveryId: d.id, attempt: 1, delayMs: firstDelay }));
}

/** The columns fan-out reads of an event row. */
const FAN_OUT_COLUMNS = {
  id: events.id,
  organizationId: events.organizationId,
  type: events.type,
  createdAt: events.createdAt,
  targetEndpointId: events.targetEndpointId,
  aboutEndpointId: sql<string | null>`case when ${events.type} = 'alert.webhook_endpoint_disabled' then ${events.data}->>'endpointId' end`,
};

/**
 * Fans out every undispatched event (in batches, each in its own transaction; rows another
 * process holds are skipped, it fans them out). Run by the relay and by the fast path
 * (workers/event-listener.ts) as soon as an event commits: whichever locks an event first fans it
 * out, exactly once. Returns the first attempt's job of each delivery created.
 */
export async function fanOutPendingEvents(deps: WebhookDeps): Promise<{ eventsDispatched: number; jobs: DeliveryJob[] }> {
  const jobs: DeliveryJob[] = [];
  let eventsDispatched = 0;
  for (let i = 0; i < FAN_OUT_BATCHES_PER_RUN; i++) {
    const batch = await deps.db.transaction(async (tx) => {
      const pending = await tx
        .select(FAN_OUT_COLUMNS)
        .from(events)
        .where(isNull(events.dispatchedAt))
        .orderBy(asc(events.createdAt), asc(events.id))
        .limit(FAN_OUT_BATCH)
        .for('update', { skipLocked: true });
      return { count: pending.length, created: await fanOutEvents(tx, deps, pending) };
    });
    eventsDispatched += batch.count;
    jobs.push(...batch.created);
    if (batch.count < FAN_OUT_BATCH) break;
  }
  return { eventsDispatched, jobs };
}

/**
 * The relay (outbox → deliveries). Each undispatched event is fanned out (fanOutEvents) and
 * marked dispatched in the same transaction: `jobs` are the first attempts of the deliveries it
 * created. Endpoint state is read at relay time (a few seconds after emission at most,
 * WEBHOOK_RELAY_INTERVAL_MS): an endpoint disabled, unsubscribed or deleted within that window
 * does not get the event.
 * `requeued` are the due pending deliveries whose job may be missing (Redis was down, a worker
 * died mid-attempt): Postgres is the source of truth, job ids make re-enqueueing harmless.
 */
export async function relayWebhookEvents(
  deps: WebhookDeps,
): Promise<{ eventsDispatched: number; deliveriesCreated: number; jobs: DeliveryJob[]; requeued: DeliveryJob[] }> {
  const { eventsDispatched, jobs } = await fanOutPendingEvents(deps);
  const deliveriesCreated = jobs.length;

  const late = new Date(deps.clock.now().getTime() - deps.config.webhooks.requeueAfterMs);
  const due = await deps.db
    .select({ id: webhookDeliveries.id, attemptCount: webhookDeliveries.attemptCount })
    .from(webhookDeliveries)
    // 'pending' written into the text, not bound: a bound status cannot match the partial index of
    // each month (webhook_deliveries_due_idx), so a generic plan (plan_cache_mode, a pooler) read
    // every month's rows, and a custom one was planned again on every run.
    .where(and(sql`${webhookDeliveries.status} = 'pending'`, lte(webhookDeliveries.nextAttemptAt, late)))
    .orderBy(asc(webhookDeliveries.nextAttemptAt))
    .limit(REQUEUE_BATCH);
  const fresh = new Set(jobs.map((j) => j.deliveryId));
  const requeued = due.filter((d) => !fresh.has(d.id)).map((d) => ({ deliveryId: d.id, attempt: d.attemptCount + 1, delayMs: 0 }));
  return { eventsDispatched, deliveriesCreated, jobs, requeued };
}
