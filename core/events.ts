import { events } from '../db/schema';
import type { DbOrTx } from '../db/client';
import { newId } from './ids';

/** Every event type the service emits; webhook endpoints subscribe to these. */
export const EVENT_TYPES = [
  'order.completed',
  'order.expired',
  'deposit.pending',
  'deposit.confirmed',
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
 * Writes an event to the outbox, inside the caller's transaction (design.md §6). It only inserts
 * the row: it never touches Redis, so a Redis outage cannot fail a payment. The webhook relay fans
 * it out later.
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
    createdAt: event.createdAt ?? new Date(),
    targetEndpointId: event.targetEndpointId ?? null,
  };
  await tx.insert(events).values(row);
  return row;
}
