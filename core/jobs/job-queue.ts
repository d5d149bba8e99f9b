import type { DeliveryJob } from '../webhooks/delivery-types';
import type { JobPayloads, QueueName } from './catalog';

/**
 * The port through which the API and domain code put work on the job tier (on the service
 * context as `jobs`). Callers never see BullMQ or the worker code; workers/ implements the
 * processors. Every method throws when the queue store (Redis) is unreachable: callers that have
 * already committed their rows may log and go on, the relay re-enqueues from Postgres.
 */
export interface JobQueue {
  /** One job. With a jobId, adding a job whose id is still in the queue is a no-op. */
  enqueue<Q extends QueueName>(queue: Q, data: JobPayloads[Q], opts?: { jobId?: string; delayMs?: number }): Promise<void>;
  /**
   * Delivery attempts (ids only), each under its deterministic job id, so enqueueing the same
   * attempt again is harmless. With `promote`, an attempt waiting as a delayed job is made due now.
   * With `batch` (first attempts just fanned out, which nothing else enqueues), they share jobs.
   */
  enqueueWebhookDeliveries(jobs: DeliveryJob[], opts?: { promote?: boolean; batch?: boolean }): Promise<void>;
}
