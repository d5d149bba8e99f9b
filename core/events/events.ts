import { sql } from 'drizzle-orm';
import { prepareStatement, type DbOrTx } from '../../db/client';
import { newId } from '../platform/ids';
import { systemClock } from '../platform/clock';

/** Every event type the service emits; webhook endpoints subscribe to these. */
export const EVENT_TYPES = [
  'order.completed',
  'order.expired',
  'deposit.pending',
  'deposit.confirmed',
  'transfer.unattributed',
  'refund.claimed',
  'refund.expired',
  'refund.completed',
  'payout.claimed',
  'payout.expired',
  'payout.completed',
  'alert.address_pool_low',
  'alert.webhook_endpoint_disabled',
  'alert.reorg_beyond_confirmations',
  'alert.chain_stalled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number] | 'webhook.test';

export interface EmittedEvent {
  id: string;
  organizationId: string;
  type: EventType;
  data: Record<string, unknown>;
  createdAt: Date;
  /** Targeted mode: delivered to this endpoint only, never fanned out to the others. */
  targetEndpointId: string | null;
}

/**
 * The Postgres channel told of committed events (the webhook fast path, workers/event-listener.ts).
 * Notifications carry no payload: identical ones in one transaction collapse into one, and the
 * listener fans out whatever is undispatched.
 */
export const EVENTS_CHANNEL = 'stablegate_events';

/** The row and its NOTIFY in one prepared statement: one round trip per event (db/client.ts prepareStatement). */
const emitStatement = prepareStatement<{ id: string; organizationId: string; type: string; data: string; createdAt: string; targetEndpointId: string | null }>(
  'events.emit',
  sql`
  with inserted as (
    insert into events (id, organization_id, type, data, created_at, target_endpoint_id)
    values (${sql.placeholder('id')}, ${sql.placeholder('organizationId')}, ${sql.placeholder('type')}, ${sql.placeholder('data')}::jsonb,
            ${sql.placeholder('createdAt')}::timestamptz, ${sql.placeholder('targetEndpointId')}::text)
    returning id
  )
  select pg_notify(${EVENTS_CHANNEL}, '') from inserted`,
);

/**
 * Writes an event to the outbox, inside the caller's transaction (design.md §6). It only inserts
 * the row and NOTIFYs EVENTS_CHANNEL, which Postgres delivers only if the transaction commits: it
 * never touches Redis, so a Redis outage cannot fail a payment. A listening worker fans it out at
 * once; the webhook relay is the recovery path for anything the fast path misses.
 */
export async function emitEvent(
  tx: DbOrTx,
  event: { organizationId: string; type: EventType; data: Record<string, unknown>; createdAt?: Date; targetEndpointId?: string },
): Promise<EmittedEvent> {
  const row = {
    id: newId('evt'),
    organizationId: event.organizationId,
    type: event.type,
    data: event.data,
    // Domain callers pass their clock's time; scripts and tests may leave it to the system clock.
    createdAt: event.createdAt ?? systemClock.now(),
    targetEndpointId: event.targetEndpointId ?? null,
  };
  await emitStatement.run(tx, {
    id: row.id,
    organizationId: row.organizationId,
    type: row.type,
    data: JSON.stringify(row.data),
    createdAt: row.createdAt.toISOString(),
    targetEndpointId: row.targetEndpointId,
  });
  return row;
}

/**
 * Many events of one recording at once (a scan range's unattributed transfers, which a catch-up
 * into a large pool has by the thousand): one INSERT for the lot and one NOTIFY, instead of a round
 * trip each. The same outbox rows as emitEvent.
 */
export async function emitEvents(tx: DbOrTx, events: { organizationId: string; type: EventType; data: Record<string, unknown>; createdAt: Date }[]): Promise<void> {
  if (events.length === 0) return;
  await tx.execute(sql`
    with inserted as (
      insert into events (id, organization_id, type, data, created_at)
      select u.id, u.organization_id, u.type, u.data::jsonb, u.created_at::timestamptz from unnest(
        ${sql.param(events.map(() => newId('evt')))}::text[],
        ${sql.param(events.map((e) => e.organizationId))}::text[],
        ${sql.param(events.map((e) => e.type))}::text[],
        ${sql.param(events.map((e) => JSON.stringify(e.data)))}::text[],
        ${sql.param(events.map((e) => e.createdAt.toISOString()))}::text[]) as u(id, organization_id, type, data, created_at)
      returning id
    )
    select pg_notify(${EVENTS_CHANNEL}, '') from (select 1 from inserted limit 1) one`);
}
