import { queryPoolSizeFor } from '../platform/config';
import type { Logger } from '../platform/logger';
import { applyAttempt, applySucceededAttempts, type SucceededAttempt } from './apply';
import { claimDeliveries, type ClaimedDelivery, type DeliveryAttempt } from './claim';
import { classifyAttempt, type Classification } from './classify';
import type { WebhookDeps } from './endpoints';
import { endpointSecret } from './endpoints';
import { sendWebhook, type SendOutcome } from './sender';
import { signWebhookBody, webhookBody } from './signing';
import { observeWebhookDelivery } from '../platform/metrics';
import { logMoney } from '../platform/money-log';

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

/** A succeeded attempt waits at most this long for the batch's other sends before it is recorded. */
const RECORD_WAIT_MS = 20;

/**
 * Database work of deliveries, at most (query pool - 2) statements or transactions at once per
 * pool, so the fan-out (listener, relay) always finds a free connection. postgres.js (3.4.9) is
 * known to wedge a pool oversubscribed with transactions (porsager/postgres#823, #1033): seen here
 * as a worker whose queries never returned when every attempt of 20 batches was applied on its own.
 */
const slotsOfPool = new WeakMap<object, { free: number; waiting: (() => void)[] }>();

async function dbSlot<T>(deps: WebhookDeps, work: () => Promise<T>): Promise<T> {
  let slots = slotsOfPool.get(deps.db);
  if (!slots) {
    slots = { free: Math.max(1, queryPoolSizeFor(deps.config, 'worker') - 2), waiting: [] };
    slotsOfPool.set(deps.db, slots);
  }
  const s = slots;
  if (s.free > 0) s.free--;
  else await new Promise<void>((resolve) => s.waiting.push(resolve));
  try {
    return await work();
  } finally {
    const next = s.waiting.shift();
    if (next) next();
    else s.free++;
  }
}

/** One delivery attempt: deliverWebhooks for one. Throws when its result could not be recorded. */
export async function deliverWebhook(deps: WebhookDeps & { logger?: Logger }, deliveryId: string, attempt: number): Promise<DeliveryResult> {
  const [result] = await deliverWebhooks(deps, [{ deliveryId, attempt }]);
  if (result.outcome === 'unrecorded') throw result.error;
  return result;
}

/**
 * Delivery attempts, each in four steps (Svix's shape): claim the attempt (claim.ts), send the
 * signed body, classify the answer or error into the next state (classify.ts, pure), apply it
 * (apply.ts). Many attempts (a batch job) share the work with Postgres: one claim statement for
 * all, their POSTs at once, the succeeded ones recorded together as they come in
 * (applySucceededAttempts); any other answer is applied on its own (applyAttempt: retries,
 * disabling). A worker that dies mid-send leaves the rows claimed until their lease ends; the relay
 * then starts the next attempts, whose claims record these as interrupted (at least once).
 * Results are in the order of `attempts`.
 */
export async function deliverWebhooks(deps: WebhookDeps & { logger?: Logger }, attempts: DeliveryAttempt[]): Promise<DeliveryResult[]> {
  const claims = await dbSlot(deps, () => claimDeliveries(deps, attempts));
  const recorder = succeededRecorder(deps, claims.filter((c) => !('skip' in c)).length);
  const secrets = new Map<string, string | null>();
  return Promise.all(
    claims.map(async (claimed): Promise<DeliveryResult> => {
      if ('skip' in claimed) return { outcome: 'skipped', reason: claimed.skip };
      const startedAt = deps.clock.now();
      const sent = await sendClaimed(deps, claimed, startedAt, secrets);
      const verdict = classifyAttempt(sent, { attempt: claimed.attempt, retryBase: claimed.retryBase, failingSince: claimed.endpoint.failingSince, startedAt, now: deps.clock.now() }, deps.config.webhooks);
      let result: DeliveryResult;
      try {
        if (verdict.next.state === 'succeeded') {
          await recorder.succeeded({ claimed, sent, startedAt, verdict });
          result = { outcome: 'succeeded', statusCode: sent.statusCode };
        } else {
          recorder.otherEnded();
          result = await dbSlot(deps, () => applyAttempt(deps, claimed, sent, verdict, startedAt));
        }
      } catch (error) {
        return { outcome: 'unrecorded', error };
      }
      reportAttempt(deps, claimed, sent, verdict, result);
      return result;
    }),
  );
}

/** The metric and the money log line of a recorded attempt. */
function reportAttempt(deps: WebhookDeps & { logger?: Logger }, claimed: ClaimedDelivery, sent: SendOutcome, verdict: Classification, result: DeliveryResult): void {
  if (result.outcome === 'skipped' || result.outcome === 'unrecorded') return;
  observeWebhookDelivery(result.outcome, sent.durationMs);
  const ids = {
    organizationId: claimed.organizationId,
    eventId: claimed.event.id,
    eventType: claimed.event.type,
    deliveryId: claimed.deliveryId,
    endpointId: claimed.endpoint.id,
    attempt: claimed.attempt,
    statusCode: sent.statusCode,
    durationMs: sent.durationMs,
  };
  if (result.outcome === 'succeeded') logMoney(deps.logger, 'webhook delivered', ids);
  else if (result.outcome === 'retry') {
    logMoney(deps.logger, 'webhook failed, will retry', { ...ids, error: verdict.error, nextAttemptAt: new Date(deps.clock.now().getTime() + result.next.delayMs).toISOString() });
  } else if (verdict.next.state === 'endpoint-disabled') {
    logMoney(deps.logger, 'webhook failed, endpoint disabled', { ...ids, error: verdict.error, reason: verdict.next.reason });
  } else logMoney(deps.logger, 'webhook failed, no more attempts', { ...ids, error: verdict.error });
}

/**
 * Gathers the succeeded attempts of one deliverWebhooks call and records them together: once no
 * other send of the call is in flight, or RECORD_WAIT_MS after the first one began to wait. If the
 * statement fails (a conflict with a concurrent record), each is applied on its own instead.
 * `succeeded` settles when that attempt is recorded; `otherEnded` says a send ended otherwise.
 */
function succeededRecorder(deps: WebhookDeps & { logger?: Logger }, inFlight: number) {
  type Waiting = { item: SucceededAttempt & { verdict: Classification }; resolve: () => void; reject: (err: unknown) => void };
  let waiting: Waiting[] = [];
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    const batch = waiting;
    waiting = [];
    if (batch.length === 0) return;
    dbSlot(deps, () => applySucceededAttempts(deps, batch.map((w) => w.item))).then(
      () => batch.forEach((w) => w.resolve()),
      (err) => {
        const why = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
        deps.logger?.warn({ count: batch.length, err: { message: why } }, 'could not record succeeded webhook attempts together; recording them one by one');
        for (const w of batch) {
          const { claimed, sent, verdict, startedAt } = w.item;
          dbSlot(deps, () => applyAttempt(deps, claimed, sent, verdict, startedAt)).then(() => w.resolve(), w.reject);
        }
      },
    );
  };
  const ended = () => {
    inFlight--;
    if (inFlight === 0) flush();
  };
  return {
    succeeded(item: Waiting['item']): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        if (!timer && inFlight > 1) timer = setTimeout(flush, RECORD_WAIT_MS);
        ended();
      });
    },
    otherEnded: ended,
  };
}

/** Signs the event's body with the endpoint's secret (decrypted once per call) and POSTs it. Never throws. */
async function sendClaimed(deps: WebhookDeps, claimed: ClaimedDelivery, startedAt: Date, secrets: Map<string, string | null>): Promise<SendOutcome> {
  const { endpoint, event } = claimed;
  const body = webhookBody(event);
  let secret = secrets.get(endpoint.secretCiphertext);
  if (secret === undefined) {
    try {
      secret = endpointSecret(endpoint, deps.config);
    } catch {
      secret = null;
    }
    secrets.set(endpoint.secretCiphertext, secret);
  }
  if (secret === null) {
    // Recorded as a failed attempt (and retried) rather than lost in a crashing job.
    const message = 'cannot decrypt the endpoint secret (was SECRET_ENCRYPTION_KEY changed?)';
    return { statusCode: null, durationMs: 0, failure: { kind: 'secret', message }, responseExcerpt: null, responseTruncated: false, retryAfterMs: null };
  }
  return sendWebhook({
    url: endpoint.url,
    body,
    timeoutMs: deps.config.webhooks.timeoutMs,
    allowInsecure: deps.config.webhooks.allowInsecure,
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': 'Stablegate-Webhooks/1',
      'X-Service-Signature': signWebhookBody(body, secret),
      'X-Service-Event-Id': event.id,
      'X-Service-Timestamp': String(Math.floor(startedAt.getTime() / 1000)),
    },
  });
}
