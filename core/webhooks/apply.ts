import { and, eq, sql } from 'drizzle-orm';
import { prepareStatement, type Tx } from '../../db/client';
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema';
import { emitEvent } from '../events/events';
import type { Logger } from '../platform/logger';
import type { ClaimedDelivery } from './claim';
import type { Classification } from './classify';
import type { DeliveryResult } from './delivery-types';
import { failPendingDeliveries, type WebhookDeps } from './endpoints';
import type { SendOutcome } from './sender';
import { deliveryIdRange } from '../platform/ids';

/**
 * Records one attempt and moves the delivery (and its endpoint) to the classified next state, in
 * one transaction. The delivery is changed only if it is still this attempt's (pending, at this
 * attempt number), so a delivery is never marked succeeded twice and a late result never
 * overrides a newer attempt. An endpoint disabled here emits alert.webhook_endpoint_disabled to
 * the organization's other endpoints, once, whoever disables it first.
 *
 * Lock order: every writer of both takes the endpoint's row before any of its deliveries' rows
 * (here, applySucceededAttempts, updateWebhookEndpoint, deleteWebhookEndpoint). Disabling holds
 * the endpoint and then closes all its pending deliveries; a success recorded at the same time for
 * one of them used to hold that delivery and then wait for the endpoint (to clear failing_since):
 * a deadlock, and when Postgres aborted the disabling side its 410 was lost — the endpoint stayed
 * enabled and the attempt `unrecorded` (issue 39).
 */
export async function applyAttempt(
  deps: WebhookDeps & { logger?: Logger },
  claimed: ClaimedDelivery,
  sent: SendOutcome,
  verdict: Classification,
  startedAt: Date,
): Promise<DeliveryResult> {
  const { deliveryId, attempt, endpoint } = claimed;
  const status = sent.statusCode;
  return deps.db.transaction(async (tx) => {
    const now = deps.clock.now();
    // A result arriving after the next claim recorded this attempt as interrupted replaces that record.
    await tx
      .delete(webhookAttempts)
      .where(and(eq(webhookAttempts.deliveryId, deliveryId), eq(webhookAttempts.attemptNumber, attempt), eq(webhookAttempts.outcome, 'interrupted')));
    await tx.insert(webhookAttempts).values({
      deliveryId,
      attemptNumber: attempt,
      startedAt,
      durationMs: sent.durationMs,
      statusCode: status,
      error: verdict.error,
      responseExcerpt: sent.responseExcerpt,
      outcome: verdict.outcome,
    });
    const mine = and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, 'pending'), eq(webhookDeliveries.attemptCount, attempt));
    const next = verdict.next;

    if (next.state === 'succeeded') {
      // The endpoint before the delivery (the lock order above).
      if (endpoint.failingSince) {
        await tx.update(webhookEndpoints).set({ failingSince: null }).where(and(eq(webhookEndpoints.id, endpoint.id), sql`${webhookEndpoints.failingSince} is not null`));
      }
      await tx.update(webhookDeliveries).set({ status: 'succeeded', deliveredAt: now, nextAttemptAt: null }).where(mine);
      return { outcome: 'succeeded', statusCode: status };
    }

    // A failure: the endpoint has been failing since its first failure after its last success.
    await tx
      .update(webhookEndpoints)
      .set({ failingSince: sql`coalesce(${webhookEndpoints.failingSince}, ${startedAt.toISOString()}::timestamptz)` })
      .where(eq(webhookEndpoints.id, endpoint.id));

    if (next.state === 'endpoint-disabled') {
      await disableEndpoint(tx, deps, claimed, next.reason, { at: startedAt, statusCode: status, error: verdict.error });
      await tx.update(webhookDeliveries).set({ status: 'failed', nextAttemptAt: null }).where(mine);
      await failPendingDeliveries(tx, endpoint.id);
      return { outcome: 'failed', statusCode: status };
    }
    if (next.state === 'failed') {
      await tx.update(webhookDeliveries).set({ status: 'failed', nextAttemptAt: null }).where(mine);
      return { outcome: 'failed', statusCode: status };
    }
    const updated = await tx
      .update(webhookDeliveries)
      .set({ nextAttemptAt: new Date(now.getTime() + next.delayMs) })
      .where(mine)
      .returning({ id: webhookDeliveries.id });
    if (updated.length === 0) return { outcome: 'skipped', reason: 'delivery changed during the attempt' };
    return { outcome: 'retry', statusCode: status, next: { deliveryId, attempt: attempt + 1, delayMs: next.delayMs } };
  });
}

/** Disables the endpoint if it is still enabled; only the transaction that does so alerts. */
async function disableEndpoint(
  tx: Tx,
  deps: WebhookDeps & { logger?: Logger },
  claimed: ClaimedDelivery,
  reason: string,
  lastFailure: { at: Date; statusCode: number | null; error: string | null },
): Promise<void> {
  const now = deps.clock.now();
  const [disabled] = await tx
    .update(webhookEndpoints)
    .set({ enabled: false, disabledReason: reason, updatedAt: now })
    .where(and(eq(webhookEndpoints.id, claimed.endpoint.id), eq(webhookEndpoints.enabled, true)))
    .returning({ id: webhookEndpoints.id, url: webhookEndpoints.url });
  if (!disabled) return;
  deps.logger?.warn({ endpointId: disabled.id, organizationId: claimed.organizationId, reason }, 'webhook endpoint disabled');
  await emitEvent(tx, {
    organizationId: claimed.organizationId,
    type: 'alert.webhook_endpoint_disabled',
    createdAt: now,
    data: {
      endpointId: disabled.id,
      url: disabled.url,
      reason,
      disabledAt: now.toISOString(),
      lastFailure: {
        eventId: claimed.event.id,
        deliveryId: claimed.deliveryId,
        attemptNumber: claimed.attempt,
        attemptedAt: lastFailure.at.toISOString(),
        statusCode: lastFailure.statusCode,
        error: lastFailure.error,
      },
    },
  });
}

const p = sql.placeholder;
const applySucceededStatement = prepareStatement<{
  ids: string[];
  attempts: number[];
  startedAt: string[];
  durationsMs: number[];
  statusCodes: number[];
  responseExcerpts: (string | null)[];
  recoveredEndpointIds: string[];
  now: string;
  from: string;
  to: string;
}>(
  'webhooks.apply_succeeded',
  sql`
    with recovered as (
      update webhook_endpoints e set failing_since = null
        from (select id from webhook_endpoints where id = any(${p('recoveredEndpointIds')}::text[]) and failing_since is not null order by id for update) l
       where e.id = l.id
      returning e.id
    ), r as materialized (
      select * from unnest(${p('ids')}::text[], ${p('attempts')}::int[], ${p('startedAt')}::text[], ${p('durationsMs')}::int[],
                           ${p('statusCodes')}::int[], ${p('responseExcerpts')}::text[])
        as r(id, attempt, started_at, duration_ms, status_code, response_excerpt)
       where (select count(*) from recovered) >= 0
    ), replaced as (
      delete from webhook_attempts a using r where a.delivery_id = r.id and a.attempt_number = r.attempt and a.outcome = 'interrupted'
         and a.delivery_id between ${p('from')} and ${p('to')}
    ), logged as (
      insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, error, response_excerpt, outcome)
      select r.id, r.attempt, r.started_at::timestamptz, r.duration_ms, r.status_code, null, r.response_excerpt, 'succeeded' from r
    )
    update webhook_deliveries d set status = 'succeeded', delivered_at = ${p('now')}::timestamptz, next_attempt_at = null
      from r where d.id = r.id and d.status = 'pending' and d.attempt_count = r.attempt and d.id between ${p('from')} and ${p('to')}`,
);

/** A 2xx answer to a claimed attempt, to be recorded. */
export interface SucceededAttempt {
  claimed: ClaimedDelivery;
  sent: SendOutcome;
  startedAt: Date;
}

/**
 * applyAttempt for many succeeded attempts, in one statement: each attempt's record (replacing an
 * `interrupted` one), each delivery succeeded if it is still this attempt's, and the endpoints
 * that were failing when claimed no longer failing. Endpoint rows are locked in id order, so two
 * of these never wait on each other in a cycle, and before any delivery row (applyAttempt's lock
 * order): `r`, which every other part reads, is gated on `recovered` having run to completion (an
 * uncorrelated scalar subquery is evaluated once, before r's first row). Left to itself Postgres
 * runs a data-modifying CTE the main query does not read only after the main query, so the
 * deliveries were locked first and a concurrent disabling (410 Gone) deadlocked with this.
 */
export async function applySucceededAttempts(deps: WebhookDeps, items: SucceededAttempt[]): Promise<void> {
  if (items.length === 0) return;
  const range = deliveryIdRange(items.map((i) => i.claimed.deliveryId));
  await applySucceededStatement.run(deps.db, {
    ids: items.map((i) => i.claimed.deliveryId),
    attempts: items.map((i) => i.claimed.attempt),
    // Start times go as text: a timestamp array would reach the driver unserialised.
    startedAt: items.map((i) => i.startedAt.toISOString()),
    durationsMs: items.map((i) => i.sent.durationMs),
    statusCodes: items.map((i) => i.sent.statusCode ?? 0),
    responseExcerpts: items.map((i) => i.sent.responseExcerpt),
    recoveredEndpointIds: [...new Set(items.filter((i) => i.claimed.endpoint.failingSince).map((i) => i.claimed.endpoint.id))],
    now: deps.clock.now().toISOString(),
    // Keeps the planner to the history partitions of these deliveries' months.
    from: range.from,
    to: range.to,
  });
}
