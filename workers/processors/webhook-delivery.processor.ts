import { deliverWebhook } from '../../core/webhooks/delivery';
import type { Processor } from './types';

/** One delivery attempt; a failed attempt schedules the next as its own delayed job. */
export const webhookDeliveryProcessor: Processor<'webhook-delivery'> = async (ctx, job) => {
  const result = await deliverWebhook(ctx, job.data.deliveryId, job.data.attempt);
  if (result.outcome === 'retry') {
    // If this fails (Redis gone), the row stays due and the relay re-enqueues it.
    await ctx.jobs.enqueueWebhookDeliveries([result.next]).catch((err) =>
      ctx.logger.warn({ deliveryId: job.data.deliveryId, err: { message: (err as Error).message } }, 'could not enqueue the next webhook attempt; the relay will'),
    );
  }
  return result.outcome === 'retry' ? { outcome: 'retry', statusCode: result.statusCode, nextInMs: result.next.delayMs } : result;
};
