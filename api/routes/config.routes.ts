import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { CONFIG_KEYS, getConfigEntry, listConfig, resetConfigValue, setConfigValue } from '../../core/organizations/org-config';
import { Type } from '@sinclair/typebox';
import { configEntrySchema, configValue, presentConfigEntry } from '../../core/views/config-entry';
import { pageQuerySchema } from '../validation';
import { pageOf } from '../../core/platform/sql-fragments';

const setConfigBody = Type.Object({ value: configValue }, { additionalProperties: false });

const TAG = 'Configuration';

export function registerConfigRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
    {
      method: 'get',
      path: '/config',
      summary: "The organization's configuration (every known key with its effective value)",
      description: `A list in the API's list shape (style A: data.config), in the order of the known keys: ${CONFIG_KEYS.map((k) => k.key).join(', ')}.`,
      tag: TAG,
      minRole: 'admin',
      query: pageQuerySchema(),
      listOf: 'config',
      response: configEntrySchema,
    },
    async ({ caller, query, reply }) => {
      // A handful of known keys: the page is cut from the whole list.
      const entries = await listConfig(deps.db, caller.organizationId);
      return reply.list('config', pageOf(entries, query).map(presentConfigEntry), { page: query.page, limit: query.limit, total: entries.length });
    },
  );

  api.route(
    { method: 'get', path: '/config/:key', summary: 'One configuration key', tag: TAG, minRole: 'admin', response: configEntrySchema },
    async ({ caller, params, reply }) => reply.ok(presentConfigEntry(await getConfigEntry(deps.db, caller.organizationId, params.key))),
  );

  api.route(
    {
      method: 'put',
      path: '/config/:key',
      summary: 'Set a configuration key',
      description: 'Unknown keys are 404; a value of the wrong type or out of range is 400.',
      tag: TAG,
      minRole: 'admin',
      body: setConfigBody,
      response: configEntrySchema,
    },
    async ({ caller, params, body, reply }) =>
      reply.ok(presentConfigEntry(await setConfigValue(deps.db, caller.organizationId, params.key, body.value)), 'Configuration updated'),
  );

  api.route(
    {
      method: 'delete',
      path: '/config/:key',
      summary: 'Reset a configuration key to its default',
      description: 'Removes the organization\'s setting; the answer is the entry with its default value (isDefault true). Resetting a key that is not set changes nothing. Unknown keys are 404.',
      tag: TAG,
      minRole: 'admin',
      response: configEntrySchema,
    },
    async ({ caller, params, reply }) =>
      reply.ok(presentConfigEntry(await resetConfigValue(deps.db, caller.organizationId, params.key)), 'Configuration reset to its default'),
  );
}
