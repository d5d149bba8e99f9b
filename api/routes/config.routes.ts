import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { CONFIG_KEYS, getConfigEntry, listConfig, setConfigValue, type ConfigEntry } from '../../core/org-config';
import { iso } from '../present';

const entrySchema = {
  type: 'object',
  properties: {
    key: { type: 'string' },
    value: { type: ['number', 'string', 'null'] },
    default: { type: ['number', 'string', 'null'] },
    isDefault: { type: 'boolean' },
    description: { type: 'string' },
    updatedAt: { type: ['string', 'null'], format: 'date-time' },
  },
};

const present = (e: ConfigEntry) => ({ ...e, updatedAt: iso(e.updatedAt) });

export function registerConfigRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
    {
      method: 'get',
      path: '/config',
      summary: "The organization's configuration (every known key with its effective value)",
      description: `Known keys: ${CONFIG_KEYS.map((k) => k.key).join(', ')}.`,
      tag: 'Configuration',
      minRole: 'admin',
      response: { type: 'array', items: entrySchema },
    },
    async ({ caller, reply }) => reply.ok((await listConfig(deps.db, caller.organizationId)).map(present)),
  );

  api.route(
    { method: 'get', path: '/config/:key', summary: 'One configuration key', tag: 'Configuration', minRole: 'admin', response: entrySchema },
    async ({ caller, params, reply }) => reply.ok(present(await getConfigEntry(deps.db, caller.organizationId, params.key))),
  );

  api.route(
    {
      method: 'put',
      path: '/config/:key',
      summary: 'Set a configuration key',
      description: 'Unknown keys are 404; a value of the wrong type or out of range is 400.',
      tag: 'Configuration',
      minRole: 'admin',
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['value'],
        properties: { value: { type: ['number', 'string', 'null'] } },
      },
      response: entrySchema,
    },
    async ({ caller, params, body, reply }) =>
      reply.ok(present(await setConfigValue(deps.db, caller.organizationId, params.key, (body as { value: unknown }).value)), 'Configuration updated'),
  );
}
