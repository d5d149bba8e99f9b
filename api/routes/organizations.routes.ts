import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { API_KEY_SORT_FIELDS, createApiKey, listApiKeysPage } from '../../core/organizations/organizations';
import { getOrganizationProfile, ORGANIZATION_NAME_MAX, SUPPORT_CONTACT_MAX, updateOrganizationProfile } from '../../core/organizations/organization-profile';
import { revokeKeyEverywhere } from '../operations';
import { Type } from '@sinclair/typebox';
import { ROLES } from '../../core/organizations/roles';
import { Nullable, StringEnum } from '../../core/platform/wire-schema';
import { apiKeySchema, createdApiKeySchema, organizationSchema, presentApiKey, presentOrganization } from '../../core/views/organization';
import { listQuerySchema, pageQuerySchema } from '../validation';

const createApiKeyBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100 }), role: StringEnum(ROLES) },
  { additionalProperties: false },
);

/** Bounds repeated from core/organizations/organization-profile.ts, which checks them again with field-named messages. */
const updateOrganizationBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: ORGANIZATION_NAME_MAX, description: 'Display name shown to payers' })),
    supportContact: Type.Optional(
      Nullable(Type.String({ maxLength: SUPPORT_CONTACT_MAX }), { description: 'An e-mail address or an http(s) URL shown to payers; null or "" removes it' }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

const TAG = 'Organizations';

export function registerOrganizationRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
    {
      method: 'get',
      path: '/organizations',
      summary: "A list holding the caller's own organization",
      description: 'A key belongs to one organization: the list holds that one (style A: data.organizations).',
      tag: TAG,
      minRole: 'admin',
      query: pageQuerySchema(),
      listOf: 'organizations',
      response: organizationSchema,
    },
    async ({ caller, query, reply }) => {
      const org = presentOrganization(await getOrganizationProfile(deps.db, caller));
      // The one organization is on page 1; later pages are empty, as in any list.
      return reply.list('organizations', query.page === 1 ? [org] : [], { page: query.page, limit: query.limit, total: 1 });
    },
  );

  api.route(
    {
      method: 'get',
      path: '/organizations/:id',
      summary: "The caller's organization: its display name and support contact",
      description: "Another organization's id is 404.",
      tag: TAG,
      minRole: 'admin',
      response: organizationSchema,
    },
    async ({ caller, params, reply }) => reply.ok(presentOrganization(await getOrganizationProfile(deps.db, caller, params.id))),
  );

  api.route(
    {
      method: 'put',
      path: '/organizations/:id',
      summary: "Rename the organization or set its support contact (what payers see)",
      description:
        'Admin and Owner. Give name, supportContact or both; a field left out is unchanged. The payment and checkout pages show the new name at their next load. Recorded in the audit log (organization.updated) with the values before and after.',
      tag: TAG,
      minRole: 'admin',
      body: updateOrganizationBody,
      response: organizationSchema,
    },
    async ({ caller, params, body, req, reply }) => {
      const updated = await updateOrganizationProfile(deps.db, caller, params.id, body, { userId: null, actor: `API key ${caller.keyId}`, ip: req.ip ?? null });
      return reply.ok(presentOrganization(updated), 'Organization updated');
    },
  );

  api.route(
    {
      method: 'post',
      path: '/organizations/:id/api-keys',
      summary: 'Create an API key (the key is shown once, in this answer only)',
      description: 'An Admin cannot create Owner keys nor grant a role above its own.',
      tag: TAG,
      minRole: 'admin',
      creates: true,
      successStatus: 201,
      body: createApiKeyBody,
      response: createdApiKeySchema,
    },
    async ({ caller, params, body, reply }) => {
      const created = await createApiKey(deps.db, caller, params.id, body);
      return reply.created({ ...presentApiKey(created), key: created.key }, 'API key created; store it now, it is not shown again');
    },
  );

  api.route(
    {
      method: 'get',
      path: '/organizations/:id/api-keys',
      summary: "List the organization's API keys (never their secrets)",
      description: 'Oldest first by default (sortBy createdAt, name or role; sortOrder), revoked keys included (style A: data.apiKeys).',
      tag: TAG,
      minRole: 'admin',
      query: listQuerySchema({ sortBy: API_KEY_SORT_FIELDS, defaultSortBy: 'createdAt', defaultSortOrder: 'asc' }),
      listOf: 'apiKeys',
      response: apiKeySchema,
    },
    async ({ caller, params, query, reply }) => {
      const { items, total } = await listApiKeysPage(deps.db, caller, params.id, query);
      return reply.list('apiKeys', items.map(presentApiKey), { page: query.page, limit: query.limit, total });
    },
  );

  api.route(
    {
      method: 'delete',
      path: '/api-keys/:keyId',
      summary: 'Revoke an API key (it stops working at once)',
      description: 'An Admin cannot revoke Owner keys; the last Owner key cannot be revoked (409 LAST_OWNER_KEY).',
      tag: TAG,
      minRole: 'admin',
      response: apiKeySchema,
    },
    async ({ caller, params, reply }) => {
      const revoked = await revokeKeyEverywhere(deps, caller, params.keyId);
      return reply.ok(presentApiKey(revoked), 'API key revoked');
    },
  );
}
