import { and, eq, sql } from 'drizzle-orm';
import { webhookDeliveries, webhookEndpoints } from '../../db/schema';
import { prepareStatement } from '../../db/client';
import type { WebhookDeps } from './endpoints';
import { deliveryIdRange } from '../platform/ids';
import { beforePartitioningBound } from '../maintenance/history-partitions';

/** Tolerance for a job that fires a little before its row's next_attempt_at. */
const EARLY_TOLERANCE_MS = 1000;

export const INTERRUPTED_ERROR = 'interrupted: no result was recorded (the worker stopped during the attempt); retried';

/** How long a claimed attempt owns its delivery: after that the relay may start another attempt. */
export function claimLeaseMs(timeoutMs: number): number {
  return timeoutMs * 2 + 1000;
}

/** One attempt of one delivery, as a job names it: the attempt is attempt_count + 1 when it was enqueued. */
export interface DeliveryAttempt {
  deliveryId: string;
  attempt: number;
}

export interface ClaimedDelivery {
  deliveryId: string;
  attempt: number;
  retryBase: number;
  organizationId: string;
  endpoint: { id: string; url: string; secretCiphertext: string; failingSince: Date | null };
  event: { id: string; type: string; createdAt: Date; data: unknown };
}

/** A claimed delivery's row (driver values: timestamps as text). */
interface ClaimedRow extends Record<string, unknown> {
  id: string;
  attempt: number;
  retry_base: number | string;
  organization_id: string;
  endpoint_id: string;
  url: string;
  secret_ciphertext: string;
  failing_since: string | null;
  event_id: string;
  type: string;
  created_at: string;
  data: unknown;
  previous_attempt_at: string | null;
}

const p = sql.placeholder;
const claimStatement = prepareStatement<{ ids: string[]; attempts: number[]; at: string; lease: string; due: string; from: string; to: string; eventFrom: string; eventTo: string }>(
  'webhooks.claim',
  sql`
    with wanted as (
      select w.id, w.attempt from unnest(${p('ids')}::text[], ${p('attempts')}::int[]) as w(id, attempt)
    ), claimed as (
      update webhook_deliveries d
         set attempt_count = w.attempt, last_attempt_at = ${p('at')}::timestamptz, next_attempt_at = ${p('lease')}::timestamptz
        from wanted w, webhook_deliveries prev, webhook_endpoints e, events ev
       where d.id = w.id and prev.id = w.id and d.status = 'pending' and d.attempt_count = w.attempt - 1
         and d.id between ${p('from')} and ${p('to')} and prev.id between ${p('from')} and ${p('to')}
         and ev.id >= ${p('eventFrom')} and ev.id < ${p('eventTo')}
         and d.next_attempt_at <= ${p('due')}::timestamptz
         and e.id = d.endpoint_id and e.enabled and e.deleted_at is null
         and ev.id = d.event_id
      returning d.id, w.attempt, d.retry_base, d.organization_id, e.id as endpoint_id, e.url, e.secret_ciphertext, e.failing_since,
                ev.id as event_id, ev.type, ev.created_at, ev.data, prev.last_attempt_at as previous_attempt_at
    ), interrupted as (
      insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, error, response_excerpt, outcome)
      select c.id, c.attempt - 1, coalesce(c.previous_attempt_at, ${p('at')}::timestamptz), null, null, ${INTERRUPTED_ERROR}, null, 'interrupted'
        from claimed c
       where c.attempt > 1 and not exists (select 1 from webhook_attempts a where a.delivery_id = c.id and a.attempt_number = c.attempt - 1
                                               and a.delivery_id between ${p('from')} and ${p('to')})
    )
    select * from claimed`,
);

/**
 * The id ranges of a claim (deliveryIdRange); a delivery from before partitioning may be a
 * redelivery, made long after its event: its event is looked for from the start.
 */
async function claimIdRange(deps: WebhookDeps, deliveryIds: string[]) {
  const range = deliveryIdRange(deliveryIds);
  const before = await beforePartitioningBound(deps.db);
  return before !== null && range.from < `whd${before.slice(3)}` ? { ...range, eventFrom: '' } : range;
}

/**
 * Claims many attempts in one statement, and says for each one, in order, what was claimed or why
 * it was not (a delivery named twice is claimed once, the second is skipped). Each claims only a
 * pending delivery at attempt - 1, due, whose endpoint is enabled. Concurrent claims of the same
 * row serialise on its row lock and the loser re-reads the new attempt_count, so exactly one wins.
 * The claim moves next_attempt_at past a lease: the relay starts another attempt only if this one
 * never reports back. `prev` is the row as it was before the update: the previous attempt's
 * start, for its `interrupted` record, written by the same statement when that attempt left none
 * (its worker was killed mid-send), so the attempt log explains the gap.
 */
export async function claimDeliveries(deps: WebhookDeps, attempts: DeliveryAttempt[]): Promise<(ClaimedDelivery | { skip: string })[]> {
  const now = deps.clock.now();
  const leaseUntil = new Date(now.getTime() + claimLeaseMs(deps.config.webhooks.timeoutMs));
  const dueBy = new Date(now.getTime() + EARLY_TOLERANCE_MS);
  const first = new Map<string, DeliveryAttempt>();
  for (const a of attempts) if (!first.has(a.deliveryId)) first.set(a.deliveryId, a);
  const wanted = [...first.values()];
  const rows = await claimStatement.run<ClaimedRow>(deps.db, {
    ids: wanted.map((a) => a.deliveryId),
    attempts: wanted.map((a) => a.attempt),
    at: now.toISOString(),
    lease: leaseUntil.toISOString(),
    due: dueBy.toISOString(),
    // Keeps the planner to the history partitions of these deliveries' months.
    ...(await claimIdRange(deps, wanted.map((a) => a.deliveryId))),
  });
  const claimed = new Map<string, ClaimedDelivery>();
  for (const row of rows) {
    claimed.set(row.id, {
      deliveryId: row.id,
      attempt: Number(row.attempt),
      retryBase: Number(row.retry_base),
      organizationId: row.organization_id,
      endpoint: {
        id: row.endpoint_id,
        url: row.url,
        secretCiphertext: row.secret_ciphertext,
        failingSince: row.failing_since ? new Date(row.failing_since) : null,
      },
      event: { id: row.event_id, type: row.type, createdAt: new Date(row.created_at), data: row.data },
    });
  }
  // One after the other: a batch keeps to one database connection at a time (delivery.ts dbSlot).
  const out: (ClaimedDelivery | { skip: string })[] = [];
  for (const a of attempts) {
    if (first.get(a.deliveryId) !== a) out.push({ skip: 'the same delivery twice in one batch' });
    else out.push(claimed.get(a.deliveryId) ?? (await whyNotClaimed(deps, a.deliveryId, a.attempt)));
  }
  return out;
}

/** Not claimed: say why, and close a delivery whose endpoint no longer receives. */
async function whyNotClaimed(deps: WebhookDeps, deliveryId: string, attempt: number): Promise<{ skip: string }> {
  const [d] = await deps.db
    .select({ status: webhookDeliveries.status, attemptCount: webhookDeliveries.attemptCount, enabled: webhookEndpoints.enabled, deletedAt: webhookEndpoints.deletedAt })
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
