import { relayWebhookEvents } from '../../core/webhooks/relay';
import type { Processor } from './types';

/** Fans new outbox events out to deliveries, and re-enqueues due deliveries whose job is missing. */
export const webhookRelayProcessor: Processor<'webhook-relay'> = async (ctx) => {
  const result = await relayWebhookEvents(ctx);
  await ctx.jobs.enqueueWebhookDeliveries(result.jobs);
  return { eventsDispatched: result.eventsDispatched, deliveriesCreated: result.deliveriesCreated, enqueued: result.jobs.length };
};
