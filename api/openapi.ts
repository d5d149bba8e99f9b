import type { ApiStyle } from '../core/platform/config';
import type { RouteSpec } from './route-kit';
import { WireFormat } from './format';
import { webhookEventsOpenApi } from './webhook-events.openapi';

/**
 * A request body schema as a client sees it: a property with a default is filled in by validation
 * when absent, so the handler's type has it, but the client need not send it.
 */
function sendable(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, { default?: unknown }>;
  const required = schema.required as string[] | undefined;
  if (!required?.some((name) => properties[name]?.default !== undefined)) return schema;
  return { ...schema, required: required.filter((name) => properties[name]?.default === undefined) };
}

/**
 * Every error status a route can answer, with the codes behind each: those every route may give
 * (a bad key, a missing role, a limit, a database outage), those of a body (malformed, too large),
 * of Idempotency-Key, and the ones its description names ("409 DUPLICATE_ORDER_REFERENCE", "503
 * NO_AVAILABLE_ADDRESSES"), so no status is known only from prose.
 */
export function errorStatusesOf(r: RouteSpec): Map<string, string[]> {
  const statuses = new Map<string, string[]>();
  const add = (status: string, code?: string) => {
    const codes = statuses.get(status) ?? [];
    if (code && !codes.includes(code)) codes.push(code);
    statuses.set(status, codes);
  };
  add('400', 'VALIDATION_ERROR');
  if (r.body) {
    add('400', 'INVALID_JSON');
    add('413', 'PAYLOAD_TOO_LARGE');
  }
  add('401', 'INVALID_API_KEY');
  add('403', 'INSUFFICIENT_PERMISSIONS');
  add('404', 'RESOURCE_NOT_FOUND');
  if (r.creates) {
    add('409', 'IDEMPOTENCY_KEY_REUSED');
    add('409', 'IDEMPOTENCY_IN_PROGRESS');
  }
  add('429', 'RATE_LIMIT_EXCEEDED');
  for (const m of `${r.summary} ${r.description ?? ''}`.matchAll(/\b([45]\d\d)\b(?: ([A-Z][A-Z_]{3,}))?/g)) add(m[1], m[2]);
  add('500', 'INTERNAL_ERROR');
  add('503', 'SERVICE_UNAVAILABLE');
  return new Map([...statuses].sort(([a], [b]) => a.localeCompare(b)));
}

/** Builds the OpenAPI 3.1 document from the same route declarations and schemas that validate requests. */
export function buildOpenApi(routes: RouteSpec[], opts: { version: string; style: ApiStyle; publicBaseUrl: string }) {
  const format = new WireFormat(opts.style);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = '/api/v1' + r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const pathParams = [...r.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const queryProps = (r.query?.properties ?? {}) as Record<string, unknown>;
    const queryParams = Object.entries(queryProps).map(([name, schema]) => ({ name, in: 'query', required: false, schema }));
    const headers = r.creates ? [{ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 }, description: 'Replays the original answer for 24 hours' }] : [];
    const status = String(r.successStatus ?? 200);
    paths[path] ??= {};
    paths[path][r.method] = {
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: [r.tag],
      'x-min-role': r.minRole,
      parameters: [...pathParams, ...queryParams, ...headers],
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: sendable(r.body) } } } } : {}),
      responses: {
        [status]: r.produces
          ? { description: 'A CSV file (an attachment), streamed', content: { [r.produces]: { schema: r.response ?? { type: 'string' } } } }
          : {
              description: r.listOf ? `A page of ${r.listOf}` : 'Success',
              content: { 'application/json': { schema: format.successSchema(r.response ?? { type: 'object' }, r.listOf) } },
            },
        ...Object.fromEntries(
          [...errorStatusesOf(r)].map(([code, codes]) => [
            code,
            {
              description: `${codes.join(', ') || 'Error'}${code === '400' && r.failuresCarrySuccess ? ' (success: false in both styles)' : ''}`,
              content: { 'application/json': { schema: code === '400' && r.failuresCarrySuccess ? format.errorSchema(true) : { $ref: '#/components/schemas/Error' } } },
            },
          ]),
        ),
      },
      security: [{ bearer: [] }, { apiKeyHeader: [] }],
    };
  }
  paths['/health'] = {
    get: {
      summary:
        'Health check (no key): status, timestamp, version, checks {database, redis, chains}; 503 "degraded" only when Postgres or Redis is down. A degraded chain (stalled, not scanned for CHAIN_STALL_ALERT_SECONDS whatever the cause, or whose providers never answered a head since start: reason never_answered, head and checkpoint null) answers 200 with checks.chains "degraded" and stalledChains [{chainId, reason, since, head, checkpoint}]. chainLooks [{chainId, looks, headLookAgeSeconds, lastLookAt, head}] per enabled chain: looks "ok" (a look at its head within HEAD_LOOK_ALERT_AFTER_SECONDS), "stale" (none that recent, but no address of it handed out since) or "stopped" (none that recent while its addresses were handed out: checks.chains "degraded")',
      tags: ['Health'],
      security: [],
      responses: { '200': { description: 'Healthy (ready)' }, '503': { description: 'Degraded (Postgres or Redis down), or status "starting": the process has not finished starting (npm start creates its first organization, key and pools first)' } },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Stablegate API',
      version: opts.version,
      description: `Stablecoin payment collection. This deployment answers in wire format ${opts.style.toUpperCase()} (API_STYLE). Both Authorization: Bearer <key> and X-API-Key: <key> are accepted.`,
    },
    servers: [{ url: opts.publicBaseUrl }],
    paths,
    webhooks: webhookEventsOpenApi(),
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer pk_…' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      },
      schemas: {
        Error: { ...format.errorSchema(), description: 'Error body in the deployment format' },
      },
    },
  };
}

/** The parts of a documented operation the reference page shows. */
interface DocumentedOperation {
  summary?: string;
  description?: string;
  'x-min-role'?: string;
  parameters?: { name: string; in: string; schema?: unknown; description?: string }[];
  requestBody?: { content?: { 'application/json'?: { schema?: unknown } } };
}

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

export type OpenApiDocument = ReturnType<typeof buildOpenApi>;

/**
 * The reference as plain HTML rendered on the server (no style, no script): what the docs page
 * shows without JavaScript, and what a text browser or a search in the page finds.
 */
export function renderPlainReference(doc: OpenApiDocument): string {
  const sections = Object.entries(doc.paths)
    .flatMap(([path, ops]) =>
      Object.entries(ops as Record<string, DocumentedOperation>).map(([method, op]) => {
        const params = op.parameters ?? [];
        const body = op.requestBody?.content?.['application/json']?.schema;
        return `<section><h3>${method.toUpperCase()} <code>${escape(path)}</code></h3>
<p>${escape(op.summary ?? '')}${op.description ? `<br><small>${escape(op.description)}</small>` : ''}</p>
${op['x-min-role'] ? `<p>Minimum role: <b>${escape(op['x-min-role'])}</b></p>` : ''}
${params.length ? `<table><tr><th>Parameter</th><th>In</th><th>Schema</th></tr>${params.map((p) => `<tr><td><code>${escape(p.name)}</code></td><td>${p.in}</td><td><code>${escape(JSON.stringify(p.schema ?? {}))}</code></td></tr>`).join('')}</table>` : ''}
${body ? `<details><summary>Request body</summary><pre>${escape(JSON.stringify(body, null, 2))}</pre></details>` : ''}
</section>`;
      }),
    )
    .join('\n');
  return `<h1>${escape(doc.info.title)} <small>v${escape(doc.info.version)}</small></h1><p>${escape(doc.info.description)}</p>
<p>Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a></p>
${sections}`;
}
