import { relayWebhookEvents } from '../../core/webhooks/relay';
import type { Processor } from './types';

/** Fans new outbox events out to deliveries, and re-enqueues due deliveries whose job is missing. */
export const webhookRelayProcessor: Processor<'webhook-relay'> = async (ctx) => {
  const result = await relayWebhookEvents(ctx);
  // First attempts it just created may share jobs; recovered ones go one per attempt (job ids collapse them).
  await ctx.jobs.enqueueWebhookDeliveries(result.jobs, { batch: true });
  await ctx.jobs.enqueueWebhookDeliveries(result.requeued);
  return { eventsDispatched: result.eventsDispatched, deliveriesCreated: result.deliveriesCreated, enqueued: result.jobs.length + result.requeued.length };
};
