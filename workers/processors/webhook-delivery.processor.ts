import { deliveryAttemptsOf } from '../../core/jobs/webhook-jobs';
import { deliverWebhooks } from '../../core/webhooks/delivery';
import type { Processor } from './types';

/**
 * The attempts of a delivery job (one, or a batch of first attempts); a failed attempt schedules
 * the next as its own delayed job. The job fails (and is logged) if a result could not be
 * recorded: those deliveries stay claimed until their lease ends, then the relay retries them.
 */
export const webhookDeliveryProcessor: Processor<'webhook-delivery'> = async (ctx, job) => {
  const attempts = deliveryAttemptsOf(job.data);
  const results = await deliverWebhooks(ctx, attempts);
  const next = results.flatMap((r) => (r.outcome === 'retry' ? [r.next] : []));
  // If this fails (Redis gone), the rows stay due and the relay re-enqueues them.
  await ctx.jobs.enqueueWebhookDeliveries(next).catch((err) =>
    ctx.logger.warn({ deliveryIds: next.map((j) => j.deliveryId), err: { message: (err as Error).message } }, 'could not enqueue the next webhook attempts; the relay will'),
  );
  const unrecorded = results.flatMap((r, i) => (r.outcome === 'unrecorded' ? [{ deliveryId: attempts[i].deliveryId, error: r.error }] : []));
  if (unrecorded.length > 0) {
    const first = unrecorded[0].error as Error;
    throw new Error(
      `${unrecorded.length} of ${attempts.length} webhook attempts sent but not recorded (${unrecorded.map((u) => u.deliveryId).join(', ')}): ${first?.message ?? String(first)}; the relay retries them after their lease`,
    );
  }
  if (results.length === 1) {
    const [r] = results;
    return r.outcome === 'retry' ? { outcome: 'retry', statusCode: r.statusCode, nextInMs: r.next.delayMs } : r;
  }
  const counts: Record<string, number> = {};
  for (const r of results) counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
  return counts;
};
