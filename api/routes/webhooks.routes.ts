import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { Type } from '@sinclair/typebox';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  ENDPOINT_SORT_FIELDS,
  listWebhookEndpoints,
  updateWebhookEndpoint,
} from '../../core/webhooks/endpoints';
import { EVENT_SORT_FIELDS, listWebhookEvents } from '../../core/webhooks/history';
import { redeliverEvent, sendTestEvent } from '../operations';
import { listQuerySchema, pageQuerySchema } from '../validation';
import { StringEnum } from '../../core/platform/wire-schema';
import { EVENT_TYPES } from '../../core/events/events';
import {
  DELIVERY_STATUSES,
  endpointSchema,
  endpointWithSecretSchema,
  eventSchema,
  presentEndpoint,
  presentEvent,
  updatedEndpointSchema,
} from '../../core/views/webhook';

const TAG = 'Webhooks';

const eventsList = Type.Array(StringEnum(EVENT_TYPES), { minItems: 1, maxItems: EVENT_TYPES.length, uniqueItems: true });
const secretInput = Type.String({ minLength: 16, maxLength: 256, pattern: '^[\\x21-\\x7e]+$', description: 'Printable ASCII, 16 to 256 characters' });
const urlInput = Type.String({ minLength: 1, maxLength: 2048 });

const createEndpointBody = Type.Object(
  { url: urlInput, events: eventsList, secret: Type.Optional(secretInput) },
  { additionalProperties: false },
);

const updateEndpointBody = Type.Object(
  {
    url: Type.Optional(urlInput),
    events: Type.Optional(eventsList),
    secret: Type.Optional(secretInput),
    rotateSecret: Type.Optional(Type.Boolean()),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

const EVENT_FILTER_TYPES = [...EVENT_TYPES, 'webhook.test'] as const;

const GUARD_NOTE =
  'The URL must be HTTPS and must not resolve to a private, loopback, link-local, CGNAT, unique-local or metadata address ' +
  '(checked now and again at every connection; WEBHOOK_ALLOW_INSECURE relaxes both for local development).';

export function registerWebhookRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
    {
      method: 'post',
      path: '/webhooks/endpoints',
      summary: 'Register a webhook endpoint (its secret is shown once, in this answer only)',
      description: `${GUARD_NOTE} When secret is omitted one is generated. Events are signed with X-Service-Signature = hex HMAC-SHA-256 of the raw body keyed with the whole secret (a generated secret\'s whsec_ prefix is part of the key).`,
      tag: TAG,
      minRole: 'admin',
      creates: true,
      successStatus: 201,
      body: createEndpointBody,
      response: endpointWithSecretSchema,
    },
    async ({ caller, body, reply }) => {
      const { endpoint, secret } = await createWebhookEndpoint(deps, caller, body);
      return reply.created({ ...presentEndpoint(endpoint), secret }, 'Webhook endpoint created; store the secret now, it is not shown again');
    },
  );

  api.route(
    {
      method: 'get',
      path: '/webhooks/endpoints',
      summary: "The organization's webhook endpoints (never their secrets)",
      description: 'Oldest first by default (sortBy createdAt or url; sortOrder).',
      tag: TAG,
      minRole: 'viewer',
      listOf: 'endpoints',
      query: listQuerySchema({ sortBy: ENDPOINT_SORT_FIELDS, defaultSortBy: 'createdAt', defaultSortOrder: 'asc' }),
      response: endpointSchema,
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listWebhookEndpoints(deps.db, caller, query);
      return reply.list('endpoints', items.map(presentEndpoint), { page: query.page, limit: query.limit, total });
    },
  );

  api.route(
    { method: 'get', path: '/webhooks/endpoints/:id', summary: 'One webhook endpoint', tag: TAG, minRole: 'viewer', response: endpointSchema },
    async ({ caller, params, reply }) => reply.ok(presentEndpoint(await getWebhookEndpoint(deps.db, caller, params.id))),
  );

  api.route(
    {
      method: 'put',
      path: '/webhooks/endpoints/:id',
      summary: 'Update a webhook endpoint: url, events, secret rotation, enabled',
      description:
        `${GUARD_NOTE} Rotate the secret with secret (your value) or rotateSecret: true (generated); the new secret is in this answer only. ` +
        'enabled: true re-enables an endpoint disabled after 410 Gone or days of failures (events emitted while it was disabled are not sent; redeliver them by hand).',
      tag: TAG,
      minRole: 'admin',
      body: updateEndpointBody,
      response: updatedEndpointSchema,
    },
    async ({ caller, params, body, reply }) => {
      const { endpoint, secret } = await updateWebhookEndpoint(deps, caller, params.id, body);
      return reply.ok({ ...presentEndpoint(endpoint), ...(secret !== null ? { secret } : {}) }, 'Webhook endpoint updated');
    },
  );

  api.route(
    {
      method: 'delete',
      path: '/webhooks/endpoints/:id',
      summary: 'Delete a webhook endpoint (nothing more is sent to it; its delivery history stays)',
      tag: TAG,
      minRole: 'admin',
      response: endpointSchema,
    },
    async ({ caller, params, reply }) => reply.ok(presentEndpoint(await deleteWebhookEndpoint(deps, caller, params.id)), 'Webhook endpoint deleted'),
  );

  api.route(
    {
      method: 'post',
      path: '/webhooks/endpoints/:id/test',
      summary: 'Send a webhook.test event to this endpoint only',
      description:
        'Creates an event of type webhook.test (data: endpointId, message) delivered, signed and retried like any other, to this endpoint only. ' +
        'Answers with the event and its delivery; follow it in GET /webhooks/events?type=webhook.test. A disabled endpoint is 409.',
      tag: TAG,
      minRole: 'admin',
      creates: true,
      successStatus: 201,
      response: eventSchema,
    },
    async ({ caller, params, reply }) => reply.created(presentEvent(await sendTestEvent(deps, caller, params.id)), 'Test event queued'),
  );

  api.route(
    {
      method: 'get',
      path: '/webhooks/events',
      summary: 'Events with their delivery state per endpoint and every attempt, newest first',
      description:
        'Filters: type; status (events with a delivery in that state); endpoint (events with a delivery to that endpoint). ' +
        'Delivery is at least once: receivers deduplicate on the event id (X-Service-Event-Id). Retry schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h with jitter.',
      tag: TAG,
      minRole: 'viewer',
      listOf: 'events',
      query: listQuerySchema({
        sortBy: EVENT_SORT_FIELDS,
        defaultSortBy: 'createdAt',
        filters: {
          type: Type.Optional(StringEnum(EVENT_FILTER_TYPES)),
          status: Type.Optional(StringEnum(DELIVERY_STATUSES)),
          endpoint: Type.Optional(Type.String({ maxLength: 64, description: 'Webhook endpoint id (whe_…)' })),
        },
      }),
      response: eventSchema,
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listWebhookEvents(deps.db, caller, { ...query, endpointId: query.endpoint });
      return reply.list('events', items.map(presentEvent), { page: query.page, limit: query.limit, total });
    },
  );

  api.route(
    {
      method: 'post',
      path: '/webhooks/events/:id/redeliver',
      summary: 'Redeliver an event now (to every endpoint it went to, or to one endpoint)',
      description:
        'Each delivery becomes pending and is attempted at once, with a fresh retry schedule; the event id (and so the receiver\'s deduplication key) is unchanged. ' +
        'With ?endpoint=whe_… the event is sent to that endpoint only, even one created after the event. Disabled endpoints are skipped; 409 when none is left.',
      tag: TAG,
      minRole: 'admin',
      query: Type.Object(
        { endpoint: Type.Optional(Type.String({ maxLength: 64, description: 'Redeliver to this endpoint only (whe_…)' })) },
        { additionalProperties: false },
      ),
      response: eventSchema,
    },
    async ({ caller, params, query, reply }) =>
      reply.ok(presentEvent(await redeliverEvent(deps, caller, params.id, { endpointId: query.endpoint })), 'Redelivery queued'),
  );
}
