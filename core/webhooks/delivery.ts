import { and, asc, eq, inArray, isNull, lte, sql } from 'drizzle-orm';
import { events, webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema';
import type { Logger } from '../logger';
import { newId } from '../ids';
import type { WebhookDeps } from './endpoints';
import { endpointSecret, failPendingDeliveries } from './endpoints';
import { sendWebhook, type SendOutcome } from './sender';
import { observeWebhookDelivery } from '../metrics/metrics';
import { signWebhookBody, webhookBody } from './signing';

/** A delivery job to enqueue: payload ids and numbers only, never secrets. */
export interface DeliveryJob {
  deliveryId: string;
  /** The attempt this job makes (attempt_count + 1 when it was enqueued): part of its job id. */
  attempt: number;
  delayMs: number;
}

/** Events fanned out per transaction, and at most this many batches per relay run. */
const FAN_OUT_BATCH = 500;
const FAN_OUT_BATCHES_PER_RUN = 20;
/** Due deliveries re-enqueued per relay run (those already queued are deduplicated by job id). */
const REQUEUE_BATCH = 1000;
/** Tolerance for a job that fires a little before its row's next_attempt_at. */
const EARLY_TOLERANCE_MS = 1000;
const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/** How long a claimed attempt owns its delivery: after that the relay may start another attempt. */
export function claimLeaseMs(timeoutMs: number): number {
  return timeoutMs * 2 + 1000;
}

/** Delay before the attempt at `index` of the schedule, with ± jitter. */
export function scheduledDelayMs(schedule: number[], index: number, jitter: number, random: () => number = Math.random): number {
  const base = schedule[index] ?? 0;
  if (base === 0 || jitter === 0) return base;
  return Math.max(0, Math.round(base * (1 + (random() * 2 - 1) * jitter)));
}

/**
 * The relay (outbox → deliveries). Each undispatched event gets one delivery row per endpoint of
 * its organization that is enabled, not deleted, subscribed to its type and was created no later
 * than the event; the event is marked dispatched in the same transaction. Endpoint state is read
 * at relay time (a few seconds after emission at most, WEBHOOK_RELAY_INTERVAL_MS): an endpoint
 * disabled, unsubscribed or deleted within that window does not get the event.
 * It then returns every due pending delivery whose job may be missing (Redis was down, a worker
 * died mid-attempt): Postgres is the source of truth, job ids make re-enqueueing harmless.
 */
export async function relayWebhookEvents(deps: WebhookDeps): Promise<{ eventsDispatched: number; deliveriesCreated: number; jobs: DeliveryJob[] }> {
  const jobs: DeliveryJob[] = [];
  let eventsDispatched = 0;
  let deliveriesCreated = 0;
  const { retryScheduleMs } = deps.config.webhooks;

  for (let i = 0; i < FAN_OUT_BATCHES_PER_RUN; i++) {
    const now = deps.clock.now();
    const batch = await deps.db.transaction(async (tx) => {
      const pending = await tx
        .select({ id: events.id, organizationId: events.organizationId, type: events.type, createdAt: events.createdAt })
        .from(events)
        .where(isNull(events.dispatchedAt))
        .orderBy(asc(events.createdAt), asc(events.id))
        .limit(FAN_OUT_BATCH)
        .for('update', { skipLocked: true });
      if (pending.length === 0) return { count: 0, created: [] as { id: string }[] };
      const orgIds = [...new Set(pending.map((e) => e.organizationId))];
      const endpoints = await tx
        .select({ id: webhookEndpoints.id, organizationId: webhookEndpoints.organizationId, events: webhookEndpoints.events, createdAt: webhookEndpoints.createdAt })
        .from(webhookEndpoints)
        .where(and(inArray(webhookEndpoints.organizationId, orgIds), eq(webhookEndpoints.enabled, true), isNull(webhookEndpoints.deletedAt)));
      const firstDelay = retryScheduleMs[0] ?? 0;
      const rows = pending.flatMap((event) =>
        endpoints
          .filter((ep) => ep.organizationId === event.organizationId && ep.events.includes(event.type) && ep.createdAt.getTime() <= event.createdAt.getTime())
          .map((ep) => ({
            id: newId('whd'),
            organizationId: event.organizationId,
            eventId: event.id,
            endpointId: ep.id,
            status: 'pending' as const,
            nextAttemptAt: new Date(now.getTime() + firstDelay),
            createdAt: now,
          })),
      );
      const created = rows.length
        ? await tx.insert(webhookDeliveries).values(rows).onConflictDoNothing().returning({ id: webhookDeliveries.id })
        : [];
      await tx.update(events).set({ dispatchedAt: now }).where(inArray(events.id, pending.map((e) => e.id)));
      return { count: pending.length, created };
    });
    eventsDispatched += batch.count;
    deliveriesCreated += batch.created.length;
    for (const d of batch.created) jobs.push({ deliveryId: d.id, attempt: 1, delayMs: retryScheduleMs[0] ?? 0 });
    if (batch.count < FAN_OUT_BATCH) break;
  }

  const late = new Date(deps.clock.now().getTime() - deps.config.webhooks.requeueAfterMs);
  const due = await deps.db
    .select({ id: webhookDeliveries.id, attemptCount: webhookDeliveries.attemptCount })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.status, 'pending'), lte(webhookDeliveries.nextAttemptAt, late)))
    .orderBy(asc(webhookDeliveries.nextAttemptAt))
    .limit(REQUEUE_BATCH);
  const fresh = new Set(jobs.map((j) => j.deliveryId));
  for (const d of due) if (!fresh.has(d.id)) jobs.push({ deliveryId: d.id, attempt: d.attemptCount + 1, delayMs: 0 });
  return { eventsDispatched, deliveriesCreated, jobs };
}

export type DeliveryResult =
  | { outcome: 'skipped'; reason: string }
  | { outcome: 'succeeded' | 'failed'; statusCode: number | null }
  | { outcome: 'retry'; statusCode: number | null; next: DeliveryJob };

/**
 * One delivery attempt. The row is claimed first (status pending, this job's attempt number,
 * due): the claim moves next_attempt_at past a lease so no other worker starts the same delivery
 * while this one sends; a worker that dies mid-send leaves the row to be retried after the lease
 * (at least once). The result is written only if the row is still this attempt's, and
 * `succeeded` only from `pending`, so a delivery is never marked succeeded twice.
 */
export async function deliverWebhook(deps: WebhookDeps & { logger?: Logger }, deliveryId: string, attempt: number): Promise<DeliveryResult> {
  const { webhooks } = deps.config;
  const claimed = await claimDelivery(deps, deliveryId, attempt);
  if ('skip' in claimed) return { outcome: 'skipped', reason: claimed.skip };

  const { endpoint, event } = claimed;
  const body = webhookBody(event);
  const startedAt = deps.clock.now();
  let signature: string | null = null;
  try {
    signature = signWebhookBody(body, endpointSecret(endpoint, deps.config));
  } catch {
    // Recorded as a failed attempt (and retried) rather than lost in a crashing job.
  }
  const sent: SendOutcome = signature === null
    ? { statusCode: null, durationMs: 0, error: 'cannot decrypt the endpoint secret (was SECRET_ENCRYPTION_KEY changed?)', responseExcerpt: null, retryAfterMs: null }
    : await sendWebhook({
        url: endpoint.url,
        body,
        timeoutMs: webhooks.timeoutMs,
        allowInsecure: webhooks.allowInsecure,
        headers: {
          'Content-Type': 'application/json',
          'User-Agent': 'Stablegate-Webhooks/1',
          'X-Service-Signature': signature,
          'X-Service-Event-Id': event.id,
          'X-Service-Timestamp': String(Math.floor(startedAt.getTime() / 1000)),
        },
      });

  const status = sent.statusCode;
  const ok = status !== null && status >= 200 && status < 300;
  const gone = status === 410;
  const error = sent.error ?? (ok ? null : status !== null && status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`);
  const nextIndex = attempt - claimed.retryBase;
  const exhausted = nextIndex >= webhooks.retryScheduleMs.length;
  let delayMs = exhausted ? 0 : scheduledDelayMs(webhooks.retryScheduleMs, nextIndex, webhooks.retryJitter);
  if (sent.retryAfterMs !== null) delayMs = Math.max(delayMs, Math.min(sent.retryAfterMs, MAX_RETRY_AFTER_MS));

  const result = await deps.db.transaction(async (tx) => {
    const now = deps.clock.now();
    await tx.insert(webhookAttempts).values({
      deliveryId,
      attemptNumber: attempt,
      startedAt,
      durationMs: sent.durationMs,
      statusCode: status,
      error,
      responseExcerpt: sent.responseExcerpt,
    });
    const mine = and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, 'pending'), eq(webhookDeliveries.attemptCount, attempt));
    if (ok) {
      await tx.update(webhookDeliveries).set({ status: 'succeeded', deliveredAt: now, nextAttemptAt: null }).where(mine);
      if (endpoint.failingSince) {
        await tx.update(webhookEndpoints).set({ failingSince: null }).where(and(eq(webhookEndpoints.id, endpoint.id), sql`${webhookEndpoints.failingSince} is not null`));
      }
      return { outcome: 'succeeded', statusCode: status } as const;
    }

    // A failure: the endpoint has been failing since its first failure after its last success.
    const [ep] = await tx
      .update(webhookEndpoints)
      .set({ failingSince: sql`coalesce(${webhookEndpoints.failingSince}, ${startedAt.toISOString()}::timestamptz)` })
      .where(eq(webhookEndpoints.id, endpoint.id))
      .returning({ failingSince: webhookEndpoints.failingSince, enabled: webhookEndpoints.enabled });
    const failingFor = ep?.failingSince ? now.getTime() - ep.failingSince.getTime() : 0;
    const disableReason = gone
      ? 'Receiver answered 410 Gone'
      : failingFor >= webhooks.disableAfterMs
        ? `Failing continuously since ${ep!.failingSince!.toISOString()}`
        : null;
    if (disableReason && ep?.enabled) {
      await tx.update(webhookEndpoints).set({ enabled: false, disabledReason: disableReason, updatedAt: now }).where(eq(webhookEndpoints.id, endpoint.id));
      deps.logger?.warn({ endpointId: endpoint.id, reason: disableReason }, 'webhook endpoint disabled');
    }
    if (disableReason || exhausted) {
      await tx.update(webhookDeliveries).set({ status: 'failed', nextAttemptAt: null }).where(mine);
      if (disableReason) await failPendingDeliveries(tx, endpoint.id);
      return { outcome: 'failed', statusCode: status } as const;
    }
    const updated = await tx
      .update(webhookDeliveries)
      .set({ nextAttemptAt: new Date(now.getTime() + delayMs) })
      .where(mine)
      .returning({ id: webhookDeliveries.id });
    if (updated.length === 0) return { outcome: 'skipped', reason: 'delivery changed during the attempt' } as const;
    return { outcome: 'retry', statusCode: status, next: { deliveryId, attempt: attempt + 1, delayMs } } as const;
  });
  if (result.outcome !== 'skipped') observeWebhookDelivery(result.outcome, sent.durationMs);
  return result;
}

interface ClaimedDelivery {
  retryBase: number;
  endpoint: { id: string; url: string; secretCiphertext: string; failingSince: Date | null };
  event: { id: string; type: string; createdAt: Date; data: unknown };
}

/**
 * Claims one attempt in a single statement: only a pending delivery at attempt - 1, due, whose
 * endpoint is enabled. Concurrent claims of the same row serialise on its row lock and the loser
 * re-reads the new attempt_count, so exactly one wins. The claim moves next_attempt_at past a
 * lease: the relay starts another attempt only if this one never reports back.
 */
async function claimDelivery(deps: WebhookDeps, deliveryId: string, attempt: number): Promise<ClaimedDelivery | { skip: string }> {
  const now = deps.clock.now();
  const leaseUntil = new Date(now.getTime() + claimLeaseMs(deps.config.webhooks.timeoutMs));
  const dueBy = new Date(now.getTime() + EARLY_TOLERANCE_MS);
  const rows = (await deps.db.execute(sql`
    update webhook_deliveries d
       set attempt_count = ${attempt}, last_attempt_at = ${now.toISOString()}::timestamptz, next_attempt_at = ${leaseUntil.toISOString()}::timestamptz
      from webhook_endpoints e, events ev
     where d.id = ${deliveryId} and d.status = 'pending' and d.attempt_count = ${attempt - 1}
       and d.next_attempt_at <= ${dueBy.toISOString()}::timestamptz
       and e.id = d.endpoint_id and e.enabled and e.deleted_at is null
       and ev.id = d.event_id
    returning d.retry_base, e.id as endpoint_id, e.url, e.secret_ciphertext, e.failing_since,
              ev.id as event_id, ev.type, ev.created_at, ev.data`)) as unknown as Record<string, any>[];
  const row = rows[0];
  if (row) {
    return {
      retryBase: Number(row.retry_base),
      endpoint: { id: row.endpoint_id, url: row.url, secretCiphertext: row.secret_ciphertext, failingSince: row.failing_since ? new Date(row.failing_since) : null },
      event: { id: row.event_id, type: row.type, createdAt: new Date(row.created_at), data: row.data },
    };
  }
  // Not claimed: say why, and close a delivery whose endpoint no longer receives.
  const [d] = await deps.db
    .select({ status: webhookDeliveries.status, attemptCount: webhookDeliveries.attemptCount, nextAttemptAt: webhookDeliveries.nextAttemptAt, enabled: webhookEndpoints.enabled, deletedAt: webhookEndpoints.deletedAt })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(eq(webhookDeliveries.id, deliveryId));
  if (!d) return { skip: 'no such delivery' };
  if (d.status !== 'pending') return { skip: `delivery is ${d.status}` };
  if (d.attemptCount !== attempt - 1) return { skip: `stale job (attempt ${attempt}, delivery at ${d.attemptCount})` };
  if (!d.enabled || d.deletedAt) {
    await deps.db
      .update(webhookDeliveries)
      .set({ status: 'failed', nextAttemptAt: null })
      .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, 'pending'), eq(webhookDeliveries.attemptCount, attempt - 1)));
    return { skip: 'endpoint disabled or deleted' };
  }
  return { skip: 'not due (claimed by another attempt)' };
}
