import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { createApiKey, getOrganization, listApiKeys, revokeApiKey, type ApiKeyView } from '../../core/organizations';
import { ROLES } from '../../core/roles';
import { iso } from '../present';

const apiKeySchema = {
  type: 'object',
  properties: {
    id: { type: 'string', example: 'key_01jd...' },
    name: { type: 'string' },
    role: { type: 'string', enum: ROLES },
    keyPrefix: { type: 'string', description: 'First characters of the key, to tell keys apart' },
    createdAt: { type: 'string', format: 'date-time' },
    revokedAt: { type: ['string', 'null'], format: 'date-time' },
  },
};

function presentKey(k: ApiKeyView) {
  return { id: k.id, organizationId: k.organizationId, name: k.name, role: k.role, keyPrefix: k.keyPrefix, createdAt: iso(k.createdAt), revokedAt: iso(k.revokedAt) };
}

export function registerOrganizationRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
    {
      method: 'get',
      path: '/organizations',
      summary: "The caller's own organization",
      tag: 'Organizations',
      minRole: 'admin',
      response: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, createdAt: { type: 'string' } } },
    },
    async ({ caller, reply }) => {
      const org = await getOrganization(deps.db, caller);
      return reply.ok({ ...org, createdAt: iso(org.createdAt) });
    },
  );

  api.route(
    {
      method: 'post',
      path: '/organizations/:id/api-keys',
      summary: 'Create an API key (the key is shown once, in this answer only)',
      description: 'An Admin cannot create Owner keys nor grant a role above its own.',
      tag: 'Organizations',
      minRole: 'admin',
      creates: true,
      successStatus: 201,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'role'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 100 },
          role: { type: 'string', enum: ROLES },
        },
      },
      response: { ...apiKeySchema, properties: { ...apiKeySchema.properties, key: { type: 'string', description: 'pk_… shown once' } } },
    },
    async ({ caller, params, body, reply }) => {
      const created = await createApiKey(deps.db, caller, params.id, body);
      return reply.created({ ...presentKey(created), key: created.key }, 'API key created; store it now, it is not shown again');
    },
  );

  api.route(
    {
      method: 'get',
      path: '/organizations/:id/api-keys',
      summary: "List the organization's API keys (never their secrets)",
      tag: 'Organizations',
      minRole: 'admin',
      response: { type: 'array', items: apiKeySchema },
    },
    async ({ caller, params, reply }) => {
      const keys = await listApiKeys(deps.db, caller, params.id);
      return reply.ok(keys.map(presentKey));
    },
  );

  api.route(
    {
      method: 'delete',
      path: '/api-keys/:keyId',
      summary: 'Revoke an API key (it stops working at once)',
      description: 'An Admin cannot revoke Owner keys; the last Owner key cannot be revoked (409 LAST_OWNER_KEY).',
      tag: 'Organizations',
      minRole: 'admin',
      response: apiKeySchema,
    },
    async ({ caller, params, reply }) => {
      const revoked = await revokeApiKey(deps.db, caller, params.keyId);
      await deps.keyCache.revoked(revoked.id, deps.redis);
      return reply.ok(presentKey(revoked), 'API key revoked');
    },
  );
}
