import type { Caller } from '../core/organizations/organizations';
import { revokeApiKey, type ApiKeyView } from '../core/organizations/organizations';
import type { DeliveryJob } from '../core/webhooks/delivery-types';
import { redeliverFailedSince, redeliverWebhookEvent, sendRetryingNow, sendTestWebhook, type WebhookEventView } from '../core/webhooks/history';
import type { ApiDeps } from './deps';

/**
 * Operations of the API tier that are a domain operation plus the tier's own follow-up (telling
 * the key caches, enqueueing deliveries). The REST routes and the dashboard both call these: a
 * signed-in page never has a second code path (issue 29).
 */

/** Revokes a key and tells every API instance's key cache at once. */
export async function revokeKeyEverywhere(deps: ApiDeps, caller: Caller, keyId: string): Promise<ApiKeyView> {
  const revoked = await revokeApiKey(deps.db, caller, keyId);
  await deps.keyCache.revoked(revoked.id, deps.redis);
  return revoked;
}

/** Rows are committed first; if Redis is down the relay enqueues them later. */
export function enqueueDeliveries(deps: ApiDeps, jobs: DeliveryJob[], promote = false): Promise<void> {
  return deps.jobs.enqueueWebhookDeliveries(jobs, { promote }).catch((err) =>
    deps.logger.warn({ err: { message: (err as Error).message } }, 'webhook delivery not enqueued now; the relay will pick it up'),
  );
}

export async function sendTestEvent(deps: ApiDeps, caller: Caller, endpointId: string): Promise<WebhookEventView> {
  const { event, jobs } = await sendTestWebhook(deps, caller, endpointId);
  await enqueueDeliveries(deps, jobs);
  return event;
}

export async function redeliverEvent(deps: ApiDeps, caller: Caller, eventId: string, options: { endpointId?: string }): Promise<WebhookEventView> {
  const { event, jobs } = await redeliverWebhookEvent(deps, caller, eventId, options);
  await enqueueDeliveries(deps, jobs, true);
  return event;
}

/** The deliveries to the endpoint that failed since the time, again, a bounded batch at a time (the dashboard's bulk redeliver). */
export async function redeliverFailed(deps: ApiDeps, caller: Caller, endpointId: string, since: Date): Promise<{ count: number; more: boolean }> {
  const { count, more, jobs } = await redeliverFailedSince(deps, caller, endpointId, since);
  await enqueueDeliveries(deps, jobs, true);
  return { count, more };
}

/** The endpoint's deliveries still being retried, sent now (their waiting attempts promoted), a bounded batch at a time. */
export async function sendRetryingDeliveriesNow(deps: ApiDeps, caller: Caller, endpointId: string): Promise<{ count: number; more: boolean }> {
  const { count, more, jobs } = await sendRetryingNow(deps, caller, endpointId);
  await enqueueDeliveries(deps, jobs, true);
  return { count, more };
}
