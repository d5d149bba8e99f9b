import type { QueueName } from '../catalog';
import type { Processor } from './types';
import { idempotencyCleanupProcessor } from './idempotency-cleanup.processor';
import { webhookDeliveryProcessor } from './webhook-delivery.processor';
import { webhookRelayProcessor } from './webhook-relay.processor';

/** One processor per queue. The type makes a missing or extra processor a compile error. */
export const PROCESSORS: { [Q in QueueName]: Processor<Q> } = {
  'idempotency-cleanup': idempotencyCleanupProcessor,
  'webhook-relay': webhookRelayProcessor,
  'webhook-delivery': webhookDeliveryProcessor,
};
