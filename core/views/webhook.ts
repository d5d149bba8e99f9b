import { Type, type Static } from '@sinclair/typebox';
import { EVENT_TYPES } from '../events/events';
import type { WebhookEndpointView } from '../webhooks/endpoints';
import type { WebhookEventView } from '../webhooks/history';
import { DateTime, iso, Nullable, NullableDateTime, StringEnum } from '../platform/wire-schema';

/** Webhook endpoints and the events sent to them, on the wire. */

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;

export const endpointSchema = Type.Object({
  id: Type.String({ example: 'whe_01jd...' }),
  url: Type.String({ format: 'uri' }),
  events: Type.Array(Type.String({ enum: [...EVENT_TYPES] })),
  enabled: Type.Boolean(),
  disabledReason: Nullable(Type.String(), { description: 'Why it was disabled (410 Gone, failing for days, by hand)' }),
  failingSince: NullableDateTime({ description: 'First failure since the last success' }),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});

/** An endpoint with its signing secret: on creation, and on update when the secret was rotated. */
export const endpointWithSecretSchema = Type.Composite([
  endpointSchema,
  Type.Object({ secret: Type.String({ description: 'Signing secret, shown in this answer only' }) }),
]);
export const updatedEndpointSchema = Type.Composite(
  [endpointSchema, Type.Object({ secret: Type.Optional(Type.String({ description: 'Signing secret, shown in this answer only' })) })],
  { description: 'secret is present only when it was rotated' },
);

const attemptSchema = Type.Object({
  attemptNumber: Type.Integer(),
  startedAt: DateTime(),
  outcome: StringEnum(['succeeded', 'failed', 'interrupted'], { description: 'interrupted: the worker stopped during the attempt, no result was seen' }),
  durationMs: Nullable(Type.Integer()),
  statusCode: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  responseExcerpt: Nullable(Type.String(), { description: 'First 1 KB of the answer' }),
});

export const eventSchema = Type.Object({
  id: Type.String({ example: 'evt_01jd...' }),
  type: Type.String(),
  createdAt: DateTime(),
  data: Type.Unsafe<unknown>({ type: 'object' }),
  dispatchedAt: NullableDateTime(),
  deliveries: Type.Array(
    Type.Object({
      id: Type.String(),
      endpointId: Type.String(),
      url: Type.String(),
      status: StringEnum(DELIVERY_STATUSES),
      attemptCount: Type.Integer(),
      nextAttemptAt: NullableDateTime(),
      lastAttemptAt: NullableDateTime(),
      deliveredAt: NullableDateTime(),
      attempts: Type.Array(attemptSchema),
    }),
  ),
});


export function presentEndpoint(e: WebhookEndpointView): Static<typeof endpointSchema> {
  return { ...e, failingSince: iso(e.failingSince), createdAt: e.createdAt.toISOString(), updatedAt: e.updatedAt.toISOString() };
}

export function presentEvent(e: WebhookEventView): Static<typeof eventSchema> {
  return {
    ...e,
    createdAt: e.createdAt.toISOString(),
    dispatchedAt: iso(e.dispatchedAt),
    deliveries: e.deliveries.map((d) => ({
      ...d,
      nextAttemptAt: iso(d.nextAttemptAt),
      lastAttemptAt: iso(d.lastAttemptAt),
      deliveredAt: iso(d.deliveredAt),
      attempts: d.attempts.map((a) => ({ ...a, startedAt: a.startedAt.toISOString() })),
    })),
  };
}
