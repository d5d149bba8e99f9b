import { createHmac } from 'node:crypto';

/** Lowercase hex HMAC-SHA-256 of the exact body bytes, keyed with the endpoint secret. */
export function signWebhookBody(body: Buffer | string, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export interface EnvelopeSource {
  id: string;
  type: string;
  createdAt: Date;
  data: unknown;
}

/**
 * The webhook body of design.md §6: `{id, type, createdAt, data}`; alert events carry `timestamp`
 * instead of `createdAt` (spec, Events). Built from the event row only, so every retry sends the
 * same bytes.
 */
export function webhookEnvelope(event: EnvelopeSource): Record<string, unknown> {
  const time = event.createdAt.toISOString();
  return event.type.startsWith('alert.')
    ? { id: event.id, type: event.type, timestamp: time, data: event.data }
    : { id: event.id, type: event.type, createdAt: time, data: event.data };
}

export function webhookBody(event: EnvelopeSource): Buffer {
  return Buffer.from(JSON.stringify(webhookEnvelope(event)), 'utf8');
}
