import type { SendFailure, SendOutcome } from './sender';

/** What the deployment's settings say about retries (config.webhooks). */
export interface RetryPolicy {
  /** Delay before each attempt, first = the first attempt. One attempt per entry. */
  retryScheduleMs: number[];
  retryJitter: number;
  /** An endpoint failing continuously this long is disabled. */
  disableAfterMs: number;
}

/** Where this attempt stands: its number, the delivery's retry base and the endpoint's state. */
export interface AttemptPosition {
  attempt: number;
  /** attempt_count when the delivery was last restarted by hand: the schedule restarts there. */
  retryBase: number;
  /** The endpoint's first failure since its last success, as read when the attempt was claimed. */
  failingSince: Date | null;
  startedAt: Date;
  now: Date;
}

/** The delivery's next state after an attempt. */
export type NextState =
  | { state: 'succeeded' }
  | { state: 'retry'; delayMs: number }
  /** The retry schedule is used up. */
  | { state: 'failed' }
  /** The endpoint stops receiving: 410 Gone, or failing longer than disableAfterMs. */
  | { state: 'endpoint-disabled'; reason: string };

export interface Classification {
  /** The attempt log's verdict and error text for this attempt. */
  outcome: 'succeeded' | 'failed';
  error: string | null;
  next: NextState;
}

/** Retry-After is honoured up to a day: a receiver cannot park a delivery for longer. */
export const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/** Delay before the attempt at `index` of the schedule, with ± jitter. */
export function scheduledDelayMs(schedule: number[], index: number, jitter: number, random: () => number = Math.random): number {
  const base = schedule[index] ?? 0;
  if (base === 0 || jitter === 0) return base;
  return Math.max(0, Math.round(base * (1 + (random() * 2 - 1) * jitter)));
}

const FAILURE_PREFIX: Record<SendFailure['kind'], string> = {
  timeout: '', // the message says it: "timed out after 15000 ms"
  blocked: '', // the URL guard's message names the address
  secret: '',
  dns: 'DNS lookup failed: ',
  tls: 'TLS error: ',
  refused: 'connection refused: ',
  network: 'network error: ',
};

function errorText(sent: SendOutcome): string | null {
  if (sent.failure) return FAILURE_PREFIX[sent.failure.kind] + sent.failure.message;
  const status = sent.statusCode;
  if (status === null) return 'no answer';
  if (status >= 200 && status < 300) return null;
  if (status >= 300 && status < 400) return `redirect (${status}) not followed`;
  return `HTTP ${status}`;
}

/**
 * The pure step of a delivery (Svix's shape: claim → send → classify → apply): from what the
 * receiver answered, or why it did not, to the attempt's verdict and the delivery's next state.
 * Only a 2xx succeeds (a body longer than the excerpt does not matter). 410 disables the
 * endpoint; so does failing continuously for disableAfterMs. Everything else is retried on the
 * schedule, later when a 429 or 503 asks for it with Retry-After, until the schedule is used up.
 */
export function classifyAttempt(sent: SendOutcome, at: AttemptPosition, policy: RetryPolicy, random: () => number = Math.random): Classification {
  const status = sent.statusCode;
  const error = errorText(sent);
  if (sent.failure === null && status !== null && status >= 200 && status < 300) {
    return { outcome: 'succeeded', error: null, next: { state: 'succeeded' } };
  }
  if (status === 410) return { outcome: 'failed', error, next: { state: 'endpoint-disabled', reason: 'Receiver answered 410 Gone' } };

  const failingSince = at.failingSince ?? at.startedAt;
  if (at.now.getTime() - failingSince.getTime() >= policy.disableAfterMs) {
    return { outcome: 'failed', error, next: { state: 'endpoint-disabled', reason: `Failing continuously since ${failingSince.toISOString()}` } };
  }
  const nextIndex = at.attempt - at.retryBase;
  if (nextIndex >= policy.retryScheduleMs.length) return { outcome: 'failed', error, next: { state: 'failed' } };

  let delayMs = scheduledDelayMs(policy.retryScheduleMs, nextIndex, policy.retryJitter, random);
  if (sent.retryAfterMs !== null) delayMs = Math.max(delayMs, Math.min(sent.retryAfterMs, MAX_RETRY_AFTER_MS));
  return { outcome: 'failed', error, next: { state: 'retry', delayMs } };
}
