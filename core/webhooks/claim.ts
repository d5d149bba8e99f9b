import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '../../db/client';
import { webhookDeliveries, webhookEndpoints } from '../../db/schema';
import type { WebhookDeps } from './endpoints';

/** Tolerance for a job that fires a little before its row's next_attempt_at. */
const EARLY_TOLERANCE_MS = 1000;

export const INTERRUPTED_ERROR = 'interrupted: no result was recorded (the worker stopped during the attempt); retried';

/** How long a claimed attempt owns its delivery: after that the relay may start another attempt. */
export function claimLeaseMs(timeoutMs: number): number {
  return timeoutMs * 2 + 1000;
}

export interface ClaimedDelivery {
  deliveryId: string;
  attempt: number;
  retryBase: number;
  organizationId: string;
  endpoint: { id: string; url: string; secretCiphertext: string; failingSince: Date | null };
  event: { id: string; type: string; createdAt: Date; data: unknown };
}

/**
 * Claims one attempt: only a pending delivery at attempt - 1, due, whose endpoint is enabled.
 * Concurrent claims of the same row serialise on its row lock and the loser re-reads the new
 * attempt_count, so exactly one wins. The claim moves next_attempt_at past a lease: the relay
 * starts another attempt only if this one never reports back. In the same transaction, a previous
 * attempt that left no record (its worker was killed mid-send) gets one, `interrupted`, so the
 * attempt log explains the gap.
 */
export async function claimDelivery(deps: WebhookDeps, deliveryId: string, attempt: number): Promise<ClaimedDelivery | { skip: string }> {
  const now = deps.clock.now();
  const leaseUntil = new Date(now.getTime() + claimLeaseMs(deps.config.webhooks.timeoutMs));
  const dueBy = new Date(now.getTime() + EARLY_TOLERANCE_MS);
  const claimed = await deps.db.transaction(async (tx) => {
    // `prev` is read before the update: the previous attempt's start, for its interrupted record.
    const rows = (await tx.execute(sql`
      update webhook_deliveries d
         set attempt_count = ${attempt}, last_attempt_at = ${now.toISOString()}::timestamptz, next_attempt_at = ${leaseUntil.toISOString()}::timestamptz
        from webhook_endpoints e, events ev, (select last_attempt_at from webhook_deliveries where id = ${deliveryId}) prev
       where d.id = ${deliveryId} and d.status = 'pending' and d.attempt_count = ${attempt - 1}
         and d.next_attempt_at <= ${dueBy.toISOString()}::timestamptz
         and e.id = d.endpoint_id and e.enabled and e.deleted_at is null
         and ev.id = d.event_id
      returning d.retry_base, d.organization_id, e.id as endpoint_id, e.url, e.secret_ciphertext, e.failing_since,
                ev.id as event_id, ev.type, ev.created_at, ev.data, prev.last_attempt_at as previous_attempt_at`)) as unknown as Record<string, any>[];
    const row = rows[0];
    if (!row) return null;
    if (attempt > 1) await recordInterruptedAttempt(tx, deliveryId, attempt - 1, row.previous_attempt_at ? new Date(row.previous_attempt_at) : now);
    return row;
  });
  if (claimed) {
    return {
      deliveryId,
      attempt,
      retryBase: Number(claimed.retry_base),
      organizationId: claimed.organization_id,
      endpoint: {
        id: claimed.endpoint_id,
        url: claimed.url,
        secretCiphertext: claimed.secret_ciphertext,
        failingSince: claimed.failing_since ? new Date(claimed.failing_since) : null,
      },
      event: { id: claimed.event_id, type: claimed.type, createdAt: new Date(claimed.created_at), data: claimed.data },
    };
  }
  return whyNotClaimed(deps, deliveryId, attempt);
}

/** The attempt before this one left no record: its worker stopped between claim and result. */
async function recordInterruptedAttempt(tx: Tx, deliveryId: string, attemptNumber: number, startedAt: Date): Promise<void> {
  await tx.execute(sql`
    insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, error, response_excerpt, outcome)
    select ${deliveryId}, ${attemptNumber}, ${startedAt.toISOString()}::timestamptz, null, null, ${INTERRUPTED_ERROR}, null, 'interrupted'
     where not exists (select 1 from webhook_attempts where delivery_id = ${deliveryId} and attempt_number = ${attemptNumber})`);
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
