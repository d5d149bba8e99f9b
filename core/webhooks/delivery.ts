import type { Logger } from '../platform/logger';
import { observeWebhookDelivery } from '../platform/metrics';
import { logMoney } from '../platform/money-log';
import { applyAttempt, applySucceededAttempts, type SucceededAttempt } from './apply';
import { claimDeliveries, type ClaimedDelivery, type DeliveryAttempt } from './claim';
import { classifyAttempt, type Classification } from './classify';
import type { WebhooksMemory } from './delivery-memory';
import type { DeliveryResult } from './delivery-types';
import type { WebhookDeps } from './endpoints';
import { endpointSecret } from './endpoints';
import { sendWebhook, type SendOutcome } from './sender';
import { signWebhookBody, webhookBody } from './signing';
import { succeededRecorder } from './succeeded-recorder';

/** What delivering needs: the webhook deps, the logger, and the process's limit on database work. */
export type DeliveryDeps = WebhookDeps & { logger?: Logger; memory: WebhooksMemory };

/** A succeeded attempt waits at most this long for the batch's other sends before it is recorded. */
const RECORD_WAIT_MS = 20;

/** One delivery attempt: deliverWebhooks for one. Throws when its result could not be recorded. */
export async function deliverWebhook(deps: DeliveryDeps, deliveryId: string, attempt: number): Promise<DeliveryResult> {
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
export async function deliverWebhooks(deps: DeliveryDeps, attempts: DeliveryAttempt[]): Promise<DeliveryResult[]> {
  const claims = await deps.memory.webhookDatabaseWork(() => claimDeliveries(deps, attempts));
  const recorder = succeededRecorder<SucceededAttempt & { verdict: Classification }>({
    inFlight: claims.filter((c) => !('skip' in c)).length,
    waitMs: RECORD_WAIT_MS,
    recordTogether: (items) => deps.memory.webhookDatabaseWork(() => applySucceededAttempts(deps, items)),
    recordOne: async ({ claimed, sent, verdict, startedAt }) => void (await deps.memory.webhookDatabaseWork(() => applyAttempt(deps, claimed, sent, verdict, startedAt))),
    onFallBack: (count, err) => {
      const why = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
      deps.logger?.warn({ count, err: { message: why } }, 'could not record succeeded webhook attempts together; recording them one by one');
    },
  });
  const secrets = new Map<string, string | null>();
  return Promise.all(
    claims.map(async (claimed): Promise<DeliveryResult> => {
      if ('skip' in claimed) return { outcome: 'skipped', reason: claimed.skip };
      const startedAt = deps.clock.now();
      const sent = await sendClaimed(deps, claimed, startedAt, secrets);
      if (sent.pausedMs !== undefined) {
        // What was observed: the attempt spanned a pause of this process, so its answer (if any)
        // was read only afterwards, possibly after the claim's lease passed and the relay resent it.
        deps.logger?.warn(
          { deliveryId: claimed.deliveryId, attempt: claimed.attempt, pausedMs: sent.pausedMs, statusCode: sent.statusCode, durationMs: sent.durationMs },
          'webhook attempt spanned a pause of this process: its answer was read after the pause',
        );
      }
      const verdict = classifyAttempt(sent, { attempt: claimed.attempt, retryBase: claimed.retryBase, failingSince: claimed.endpoint.failingSince, startedAt, now: deps.clock.now() }, deps.config.webhooks);
      let result: DeliveryResult;
      try {
        if (verdict.next.state === 'succeeded') {
          await recorder.succeeded({ claimed, sent, startedAt, verdict });
          result = { outcome: 'succeeded', statusCode: sent.statusCode };
        } else {
          recorder.otherEnded();
          result = await deps.memory.webhookDatabaseWork(() => applyAttempt(deps, claimed, sent, verdict, startedAt));
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
function reportAttempt(deps: DeliveryDeps, claimed: ClaimedDelivery, sent: SendOutcome, verdict: Classification, result: DeliveryResult): void {
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
