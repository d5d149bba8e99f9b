import type { DeliveryAttempt } from './claim';

/**
 * What a delivery attempt ends as and what it asks for next: shared by the delivery steps
 * (delivery.ts runs them, apply.ts records one) and by the job tier that enqueues the next
 * attempt (core/jobs/webhook-jobs.ts).
 */

export type { DeliveryAttempt };

/** A delivery job to enqueue: payload ids and numbers only, never secrets. */
export interface DeliveryJob extends DeliveryAttempt {
  delayMs: number;
}

export type DeliveryResult =
  | { outcome: 'skipped'; reason: string }
  | { outcome: 'succeeded' | 'failed'; statusCode: number | null }
  | { outcome: 'retry'; statusCode: number | null; next: DeliveryJob }
  /** Sent, but its result could not be written: the delivery stays claimed until its lease ends, then the relay retries it. */
  | { outcome: 'unrecorded'; error: unknown };
