import { and, asc, count, eq, isNull } from 'drizzle-orm';
import { sortedBy } from '../platform/list-order';
import type { Database, DbOrTx } from '../../db/client';
import { webhookDeliveries, webhookEndpoints } from '../../db/schema';
import type { Clock } from '../platform/clock';
import type { Config } from '../platform/config';
import { notFound } from '../platform/errors';
import type { EventType } from '../events/events';
import { newId } from '../platform/ids';
import type { Caller } from '../organizations/organizations';
import { decryptSecret, encryptSecret, randomToken } from '../platform/secrets';
import { assertWebhookUrlAllowed } from './url-guard';
import { paginate } from '../platform/sql-fragments';

/** What webhook domain operations need from the service context. */
export interface WebhookDeps {
  db: Database;
  config: Config;
  clock: Clock;
}

export interface WebhookEndpointView {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

type EndpointRow = typeof webhookEndpoints.$inferSelect;

function toView(row: EndpointRow): WebhookEndpointView {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    disabledReason: row.disabledReason,
    failingSince: row.failingSince,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** A generated signing secret: `whsec_` + 32 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomToken(32)}`;
}

export interface CreateEndpointInput {
  url: string;
  events: EventType[];
  secret?: string;
}

/** The endpoint and, only here and on rotation, its secret in clear (shown once). */
export interface EndpointWithSecret {
  endpoint: WebhookEndpointView;
  secret: string;
}

export async function createWebhookEndpoint(deps: WebhookDeps, caller: Caller, input: CreateEndpointInput): Promise<EndpointWithSecret> {
  await assertWebhookUrlAllowed(input.url, { allowInsecure: deps.config.webhooks.allowInsecure });
  const secret = input.secret ?? generateWebhookSecret();
  const now = deps.clock.now();
  const [row] = await deps.db
    .insert(webhookEndpoints)
    .values({
      id: newId('whe'),
      organizationId: caller.organizationId,
      url: input.url,
      events: [...new Set(input.events)],
      secretCiphertext: encryptSecret(secret, deps.config.secretEncryptionKey),
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  return { endpoint: toView(row), secret };
}

function ownEndpoint(organizationId: string, id: string) {
  return and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.organizationId, organizationId), isNull(webhookEndpoints.deletedAt));
}

/** Another organization's id answers exactly like an id that does not exist (404). */
export async function getWebhookEndpoint(db: DbOrTx, caller: Caller, id: string): Promise<WebhookEndpointView> {
  const [row] = await db.select().from(webhookEndpoints).where(ownEndpoint(caller.organizationId, id));
  if (!row) throw notFound('Webhook endpoint');
  return toView(row);
}

export const ENDPOINT_SORT_FIELDS = ['createdAt', 'url'] as const;

export async function listWebhookEndpoints(
  db: DbOrTx,
  caller: Caller,
  page: { page: number; limit: number; sortBy?: (typeof ENDPOINT_SORT_FIELDS)[number]; sortOrder?: 'asc' | 'desc' },
): Promise<{ items: WebhookEndpointView[]; total: number }> {
  const where = and(eq(webhookEndpoints.organizationId, caller.organizationId), isNull(webhookEndpoints.deletedAt));
  const [{ n }] = await db.select({ n: count() }).from(webhookEndpoints).where(where);
  const rows = await paginate(
    db
      .select()
      .from(webhookEndpoints)
      .where(where)
      .orderBy(...sortedBy(page.sortOrder ?? 'asc', page.sortBy === 'url' ? webhookEndpoints.url : webhookEndpoints.createdAt, webhookEndpoints.id))
      .$dynamic(),
    page,
  );
  return { items: rows.map(toView), total: Number(n) };
}

export interface UpdateEndpointInput {
  url?: string;
  events?: EventType[];
  /** A new secret chosen by the caller. */
  secret?: string;
  /** Generate a new secret (returned once in the answer). */
  rotateSecret?: boolean;
  /** true re-enables a disabled endpoint (clears the failure state); false disables it. */
  enabled?: boolean;
}

export async function updateWebhookEndpoint(
  deps: WebhookDeps,
  caller: Caller,
  id: string,
  input: UpdateEndpointInput,
): Promise<{ endpoint: WebhookEndpointView; secret: string | null }> {
  if (input.url !== undefined) await assertWebhookUrlAllowed(input.url, { allowInsecure: deps.config.webhooks.allowInsecure });
  const secret = input.secret ?? (input.rotateSecret ? generateWebhookSecret() : null);
  return deps.db.transaction(async (tx) => {
    const [current] = await tx.select().from(webhookEndpoints).where(ownEndpoint(caller.organizationId, id)).for('update');
    if (!current) throw notFound('Webhook endpoint');
    const changes: Partial<EndpointRow> = { updatedAt: deps.clock.now() };
    if (input.url !== undefined) changes.url = input.url;
    if (input.events !== undefined) changes.events = [...new Set(input.events)];
    if (secret !== null) changes.secretCiphertext = encryptSecret(secret, deps.config.secretEncryptionKey);
    if (input.enabled === true && !current.enabled) {
      Object.assign(changes, { enabled: true, disabledReason: null, failingSince: null });
    } else if (input.enabled === false && current.enabled) {
      Object.assign(changes, { enabled: false, disabledReason: 'Disabled by the organization', failingSince: null });
      await failPendingDeliveries(tx, id);
    }
    const [row] = await tx.update(webhookEndpoints).set(changes).where(eq(webhookEndpoints.id, id)).returning();
    return { endpoint: toView(row), secret };
  });
}

/** Soft delete: delivery history keeps pointing at it; nothing more is sent to it. */
export async function deleteWebhookEndpoint(deps: WebhookDeps, caller: Caller, id: string): Promise<WebhookEndpointView> {
  return deps.db.transaction(async (tx) => {
    const now = deps.clock.now();
    const [row] = await tx
      .update(webhookEndpoints)
      .set({ deletedAt: now, enabled: false, disabledReason: 'Deleted', updatedAt: now })
      .where(ownEndpoint(caller.organizationId, id))
      .returning();
    if (!row) throw notFound('Webhook endpoint');
    await failPendingDeliveries(tx, id);
    return toView(row);
  });
}

/** Pending deliveries of an endpoint that stops receiving are closed as failed (redeliver by hand). */
export async function failPendingDeliveries(tx: DbOrTx, endpointId: string): Promise<void> {
  await tx
    .update(webhookDeliveries)
    .set({ status: 'failed', nextAttemptAt: null })
    .where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.status, 'pending')));
}

/** The signing secret in clear, for the delivery worker only. */
export function endpointSecret(row: { secretCiphertext: string }, config: Config): string {
  return decryptSecret(row.secretCiphertext, config.secretEncryptionKey);
}
