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
        [status]: {
          description: r.listOf ? `A page of ${r.listOf}` : 'Success',
          content: { 'application/json': { schema: format.successSchema(r.response ?? { type: 'object' }, r.listOf) } },
        },
        '400': r.failuresCarrySuccess
          ? { description: 'Error body; success: false in both styles', content: { 'application/json': { schema: format.errorSchema(true) } } }
          : { $ref: '#/components/responses/Error' },
        '401': { $ref: '#/components/responses/Error' },
        '403': { $ref: '#/components/responses/Error' },
        '404': { $ref: '#/components/responses/Error' },
        '429': { $ref: '#/components/responses/Error' },
      },
      security: [{ bearer: [] }, { apiKeyHeader: [] }],
    };
  }
  paths['/health'] = {
    get: {
      summary:
        'Health check (no key): status, timestamp, version, checks {database, redis, chains}; 503 "degraded" only when Postgres or Redis is down. A stalled chain answers 200 with checks.chains "degraded" and stalledChains [{chainId, reason, since, head, checkpoint}]',
      tags: ['Health'],
      security: [],
      responses: { '200': { description: 'Healthy' }, '503': { description: 'Degraded' } },
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
      responses: {
        Error: {
          description: 'Error body in the deployment format',
          content: { 'application/json': { schema: format.errorSchema() } },
        },
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

/** A plain, dependency-free reference page rendered from the OpenAPI document. */
export function renderDocsPage(doc: ReturnType<typeof buildOpenApi>): string {
  const sections = Object.entries(doc.paths)
    .flatMap(([path, ops]) =>
      Object.entries(ops as Record<string, DocumentedOperation>).map(([method, op]) => {
        const params = op.parameters ?? [];
        const body = op.requestBody?.content?.['application/json']?.schema;
        return `<section><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>
<p>${escape(op.summary ?? '')}${op.description ? `<br><small>${escape(op.description)}</small>` : ''}</p>
${op['x-min-role'] ? `<p class="role">Minimum role: <b>${escape(op['x-min-role'])}</b></p>` : ''}
${params.length ? `<table><tr><th>Parameter</th><th>In</th><th>Schema</th></tr>${params.map((p) => `<tr><td><code>${escape(p.name)}</code></td><td>${p.in}</td><td><code>${escape(JSON.stringify(p.schema ?? {}))}</code></td></tr>`).join('')}</table>` : ''}
${body ? `<details><summary>Request body</summary><pre>${escape(JSON.stringify(body, null, 2))}</pre></details>` : ''}
</section>`;
      }),
    )
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(doc.info.title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1c2430}
section{border-top:1px solid #dde;padding:.5rem 0}.m{display:inline-block;min-width:4.5em;font-size:.8em;padding:.1em .4em;border-radius:4px;color:#fff;background:#667}
.m.get{background:#2a7}.m.post{background:#27c}.m.put{background:#c82}.m.delete{background:#c33}table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #dde;padding:.2em .5em;text-align:left}
pre{background:#f5f6f8;padding:.5em;overflow:auto}</style></head><body>
<h1>${escape(doc.info.title)} <small>v${escape(doc.info.version)}</small></h1><p>${escape(doc.info.description)}</p>
<p>Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a></p>
${sections}</body></html>`;
}
