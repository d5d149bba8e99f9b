import type { DeliveryJob } from '../webhooks/delivery';
import { jobId, type Queues } from './catalog';

/** Job id of one delivery attempt: deterministic, so re-enqueueing the same attempt is a no-op. */
export function webhookDeliveryJobId(deliveryId: string, attempt: number): string {
  return jobId('webhook-delivery', `${deliveryId}-${attempt}`);
}

/**
 * Enqueues delivery attempts (ids only). Safe to call again for the same attempt. With
 * `promote`, an attempt already waiting as a delayed job is made due now (manual redelivery).
 * Throws when Redis is unreachable; callers that already committed the rows may ignore that:
 * the relay re-enqueues every due delivery from Postgres.
 */
export async function enqueueWebhookDeliveries(queues: Queues, jobs: DeliveryJob[], opts: { promote?: boolean } = {}): Promise<void> {
  if (jobs.length === 0) return;
  const queue = queues['webhook-delivery'];
  if (opts.promote) {
    for (const j of jobs) {
      const existing = await queue.getJob(webhookDeliveryJobId(j.deliveryId, j.attempt));
      if (existing && (await existing.isDelayed())) await existing.promote();
    }
  }
  await queue.addBulk(
    jobs.map((j) => ({
      name: 'webhook-delivery',
      data: { deliveryId: j.deliveryId, attempt: j.attempt },
      opts: { jobId: webhookDeliveryJobId(j.deliveryId, j.attempt), delay: Math.max(0, j.delayMs) },
    })),
  );
}
