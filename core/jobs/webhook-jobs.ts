import { createHash } from 'node:crypto';
import type { DeliveryAttempt, DeliveryJob } from '../webhooks/delivery-types';
import { jobId, type JobPayloads, type Queues } from './catalog';

/** Attempts one delivery job carries at most (core/webhooks/delivery.ts deliverWebhooks). */
export const DELIVERY_BATCH_MAX = 25;

/** Job id of one delivery attempt: deterministic, so re-enqueueing the same attempt is a no-op. */
export function webhookDeliveryJobId(deliveryId: string, attempt: number): string {
  return jobId('webhook-delivery', `${deliveryId}-${attempt}`);
}

/** Job id of a batch: deterministic in its attempts, so enqueueing the same batch again is a no-op. */
function webhookBatchJobId(attempts: DeliveryAttempt[]): string {
  const digest = createHash('sha256')
    .update(attempts.map((a) => `${a.deliveryId}:${a.attempt}`).join(','))
    .digest('hex')
    .slice(0, 32);
  return jobId('webhook-delivery', `batch-${digest}`);
}

/** The attempts a delivery job makes: one (retries, redeliveries, recovery) or a batch (fresh fan-outs). */
export function deliveryAttemptsOf(data: JobPayloads['webhook-delivery']): DeliveryAttempt[] {
  return 'deliveries' in data ? data.deliveries : [{ deliveryId: data.deliveryId, attempt: data.attempt }];
}

/** `items` in `parts` runs of nearly equal length, in order. */
function evenChunks<T>(items: T[], max: number): T[][] {
  const parts = Math.ceil(items.length / max);
  const size = Math.ceil(items.length / parts);
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Enqueues delivery attempts (ids only). Safe to call again for the same attempt. With
 * `promote`, an attempt already waiting as a delayed job is made due now (manual redelivery).
 * With `batch`, attempts due at the same time share jobs of up to DELIVERY_BATCH_MAX (split evenly,
 * so several workers take part): for first attempts just fanned out, which nothing else enqueues
 * (fan-out locks its events), so no other job of theirs exists for a job id to collapse with; a
 * second job of the same attempt would only lose its claim. Everything else is one job per
 * attempt under its deterministic id, so the relay's re-enqueueing collapses with what is queued.
 * Throws when Redis is unreachable; callers that already committed the rows may ignore that:
 * the relay re-enqueues every due delivery from Postgres.
 */
export async function enqueueWebhookDeliveries(queues: Queues, jobs: DeliveryJob[], opts: { promote?: boolean; batch?: boolean } = {}): Promise<void> {
  if (jobs.length === 0) return;
  const queue = queues['webhook-delivery'];
  if (opts.promote) {
    for (const j of jobs) {
      const existing = await queue.getJob(webhookDeliveryJobId(j.deliveryId, j.attempt));
      if (existing && (await existing.isDelayed())) await existing.promote();
    }
  }
  const byDelay = new Map<number, DeliveryJob[]>();
  for (const j of jobs) {
    const delay = Math.max(0, j.delayMs);
    const group = byDelay.get(delay) ?? [];
    group.push(j);
    byDelay.set(delay, group);
  }
  const bulk = [...byDelay].flatMap(([delay, group]) =>
    (opts.batch && !opts.promote ? evenChunks(group, DELIVERY_BATCH_MAX) : group.map((j) => [j])).map((chunk) => {
      const attempts = chunk.map((j) => ({ deliveryId: j.deliveryId, attempt: j.attempt }));
      return chunk.length === 1
        ? { name: 'webhook-delivery', data: attempts[0], opts: { jobId: webhookDeliveryJobId(attempts[0].deliveryId, attempts[0].attempt), delay } }
        : { name: 'webhook-delivery', data: { deliveries: attempts }, opts: { jobId: webhookBatchJobId(attempts), delay } };
    }),
  );
  await queue.addBulk(bulk);
}
