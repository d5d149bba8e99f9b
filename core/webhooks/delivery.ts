import type { Logger } from '../logger';
import { applyAttempt } from './apply';
import { claimDelivery, type ClaimedDelivery } from './claim';
import { classifyAttempt } from './classify';
import type { WebhookDeps } from './endpoints';
import { endpointSecret } from './endpoints';
import { sendWebhook, type SendOutcome } from './sender';
import { signWebhookBody, webhookBody } from './signing';
import { observeWebhookDelivery } from '../metrics/metrics';
import { logMoney } from '../money-log';

/** A delivery job to enqueue: payload ids and numbers only, never secrets. */
export interface DeliveryJob {
  deliveryId: string;
  /** The attempt this job makes (attempt_count + 1 when it was enqueued): part of its job id. */
  attempt: number;
  delayMs: number;
}

export type DeliveryResult =
  | { outcome: 'skipped'; reason: string }
  | { outcome: 'succeeded' | 'failed'; statusCode: number | null }
  | { outcome: 'retry'; statusCode: number | null; next: DeliveryJob };

/**
 * One delivery attempt, in four steps (Svix's shape): claim the attempt (claim.ts), send the
 * signed body, classify the answer or error into the next state (classify.ts, pure), apply it
 * (apply.ts). A worker that dies mid-send leaves the row claimed until its lease ends; the relay
 * then starts the next attempt, whose claim records this one as interrupted (at least once).
 */
export async function deliverWebhook(deps: WebhookDeps & { logger?: Logger }, deliveryId: string, attempt: number): Promise<DeliveryResult> {
  const claimed = await claimDelivery(deps, deliveryId, attempt);
  if ('skip' in claimed) return { outcome: 'skipped', reason: claimed.skip };
  const startedAt = deps.clock.now();
  const sent = await sendClaimed(deps, claimed, startedAt);
  const verdict = classifyAttempt(sent, { attempt, retryBase: claimed.retryBase, failingSince: claimed.endpoint.failingSince, startedAt, now: deps.clock.now() }, deps.config.webhooks);
  const result = await applyAttempt(deps, claimed, sent, verdict, startedAt);
  if (result.outcome !== 'skipped') {
    observeWebhookDelivery(result.outcome, sent.durationMs);
    const ids = {
      organizationId: claimed.organizationId,
      eventId: claimed.event.id,
      eventType: claimed.event.type,
      deliveryId,
      endpointId: claimed.endpoint.id,
      attempt,
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
  return result;
}

/** Signs the event's body with the endpoint's secret and POSTs it. Never throws. */
async function sendClaimed(deps: WebhookDeps, claimed: ClaimedDelivery, startedAt: Date): Promise<SendOutcome> {
  const { endpoint, event } = claimed;
  const body = webhookBody(event);
  let signature: string;
  try {
    signature = signWebhookBody(body, endpointSecret(endpoint, deps.config));
  } catch {
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
      'X-Service-Signature': signature,
      'X-Service-Event-Id': event.id,
      'X-Service-Timestamp': String(Math.floor(startedAt.getTime() / 1000)),
    },
  });
}
