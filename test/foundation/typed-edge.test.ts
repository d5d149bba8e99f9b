import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import request from 'supertest';
import { Kind, Type, type TSchema } from '@sinclair/typebox';
import { buildTestApp, createTestOrg, STYLES } from '../helpers/harness';
import type { ApiBuilder, PathParams } from '../../api/route-kit';
import { pageQuerySchema } from '../../api/validation';

/**
 * The HTTP edge is typed from its schemas (issue 15): a route's body, query, params and answer
 * take their types from the TypeBox schemas and path it declares. Three guards: type-level checks
 * of that derivation, including that a handler cannot reach the raw (`any`) req.body (compiled by
 * `tsc --noEmit`, which `npm test` runs first); a scan of api/ that fails on `any` and on explicit
 * type arguments to api.route, which could bypass it; and a walk of every declared route's body
 * and query schemas that fails on a part accepting any value (Type.Any(), Type.Unknown(), an empty
 * Type.Unsafe()), which the text scan cannot see.
 */

type IsAny<T> = 0 extends 1 & T ? true : false;
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

export type PathChecks = [
  Expect<Equal<keyof PathParams<'/organizations/:id/api-keys'>, 'id'>>,
  Expect<Equal<keyof PathParams<'/a/:first/b/:second'>, 'first' | 'second'>>,
  Expect<Equal<keyof PathParams<'/orders'>, never>>,
];

/** Never called: its body only has to compile. */
export function declareTypedRoute(api: ApiBuilder): void {
  api.route(
    {
      method: 'post',
      path: '/widgets/:widgetId',
      summary: 'type check',
      tag: 'Test',
      minRole: 'member',
      body: Type.Object({ count: Type.Integer(), note: Type.Optional(Type.String()) }),
      query: pageQuerySchema({ colour: Type.Optional(Type.String()) }),
      response: Type.Object({ id: Type.String() }),
    },
    ({ body, query, params, req, reply }) => {
      type Checks = [
        Expect<Equal<IsAny<typeof body>, false>>,
        Expect<Equal<IsAny<typeof query>, false>>,
        Expect<Equal<IsAny<typeof params>, false>>,
        Expect<Equal<typeof body.count, number>>,
        Expect<Equal<typeof body.note, string | undefined>>,
        Expect<Equal<typeof query.page, number>>,
        Expect<Equal<typeof query.colour, string | undefined>>,
        Expect<Equal<typeof params.widgetId, string>>,
      ];
      const checked: Checks | null = null;
      // @ts-expect-error a path parameter the path does not declare
      void params.other;
      // @ts-expect-error a body field the schema does not declare
      void body.colour;
      // @ts-expect-error an answer that does not match the response schema
      void reply.ok({ id: 1 });
      // @ts-expect-error the raw body (Express types it `any`) is out of reach: only the validated one
      void req.body;
      // @ts-expect-error the raw query likewise
      void req.query;
      // @ts-expect-error the raw path parameters likewise
      void req.params;
      void req.headers; // what the schemas do not cover stays reachable
      return reply.ok({ id: String(checked) });
    },
  );
  api.route({ method: 'get', path: '/widgets', summary: 'no body, no query', tag: 'Test', minRole: 'viewer' }, ({ body, query }) => {
    type Checks = [Expect<Equal<typeof body, undefined>>, Expect<Equal<keyof typeof query, never>>];
    const checked: Checks | null = null;
    return { status: 200, body: checked };
  });
}

const API_DIR = path.resolve(__dirname, '../../api');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sourceFiles(full) : full.endsWith('.ts') ? [full] : [];
  });
}

/** The code of a TypeScript file without its comments and the text of its string literals. */
function codeOnly(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`/g, (m) => m.replace(/[^\n]/g, ' '));
}

describe('typed HTTP edge', () => {
  const files = sourceFiles(API_DIR);

  it('scans every source file of api/', () => {
    expect(files.map((f) => path.relative(API_DIR, f))).to.include.members(['route-kit.ts', 'routes/orders.routes.ts', 'presenters/deposits.ts']);
  });

  it('has no `any` in api/ (route inputs are derived from their schemas)', () => {
    const found: string[] = [];
    for (const file of files) {
      codeOnly(readFileSync(file, 'utf8'))
        .split('\n')
        .forEach((line, i) => {
          if (/\bany\b/.test(line)) found.push(`${path.relative(API_DIR, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found, found.join('\n')).to.deep.equal([]);
  });

  it('declares no route with explicit type arguments (they would override the schemas)', () => {
    const found = files.filter((file) => /\.route\s*</.test(codeOnly(readFileSync(file, 'utf8')))).map((f) => path.relative(API_DIR, f));
    expect(found).to.deep.equal([]);
  });

  it('the scan sees `any` where it is', () => {
    expect(/\bany\b/.test(codeOnly("const x: any = 'any'; // any"))).to.equal(true);
    expect(/\bany\b/.test(codeOnly("const x = 'any'; // any\n/* any */"))).to.equal(false);
  });
});

/** Keywords that constrain a JSON schema's value; a schema with none of them accepts anything. */
const CONSTRAINING = ['type', 'anyOf', 'oneOf', 'allOf', 'enum', 'const', 'not', '$ref'];

/** Where a schema (or a part of it) accepts any JSON value, named from `at`. */
function acceptAnything(schema: TSchema, at: string): string[] {
  const found = CONSTRAINING.some((k) => k in schema) ? [] : [`${at} (${String(schema[Kind] ?? 'no type')})`];
  const parts: [string, unknown][] = [
    ...Object.entries((schema.properties ?? {}) as Record<string, unknown>).map(([k, v]): [string, unknown] => [`${at}.${k}`, v]),
    ...Object.entries((schema.patternProperties ?? {}) as Record<string, unknown>).map(([k, v]): [string, unknown] => [`${at}[/${k}/]`, v]),
    [`${at}.*`, schema.additionalProperties],
    [`${at}[]`, schema.items],
    ...['anyOf', 'oneOf', 'allOf'].flatMap((k) => ((schema[k] ?? []) as unknown[]).map((v, i): [string, unknown] => [`${at}<${k} ${i}>`, v])),
  ];
  for (const [where, part] of parts) {
    for (const p of Array.isArray(part) ? part : [part]) if (p && typeof p === 'object') found.push(...acceptAnything(p as TSchema, where));
  }
  return found;
}

describe('route inputs are validated, not just typed', () => {
  /**
   * Reviewed exceptions: any JSON value on purpose. The core answers anything but a decimal string
   * with the specified INVALID_AMOUNT (a schema type error would be a generic VALIDATION_ERROR).
   */
  const ACCEPTED = ['POST /orders body.amount (Unknown)'];

  it('no body or query of a declared route has a part that accepts any value, beyond the reviewed ones', () => {
    const { app } = buildTestApp();
    const found = app.routeTable.flatMap((r) => [
      ...(r.body ? acceptAnything(r.body, `${r.method.toUpperCase()} ${r.path} body`) : []),
      ...(r.query ? acceptAnything(r.query, `${r.method.toUpperCase()} ${r.path} query`) : []),
    ]);
    expect(app.routeTable.filter((r) => r.body).length, 'routes with a body').to.be.at.least(10);
    expect(found).to.deep.equal(ACCEPTED);
  });

  it('the walk finds Type.Any(), Type.Unknown() and an empty Type.Unsafe() wherever they are nested', () => {
    const schema = Type.Object({
      a: Type.Any(),
      b: Type.Optional(Type.Array(Type.Unknown())),
      c: Type.Union([Type.String(), Type.Object({ d: Type.Unsafe<string>({}) })]),
      e: Type.Record(Type.String(), Type.Any()),
      fine: Type.Object({ n: Type.Integer(), s: Type.Optional(Type.String()), l: Type.Literal('x') }),
    });
    expect(acceptAnything(schema, 'x')).to.have.members(['x.a (Any)', 'x.b[] (Unknown)', 'x.c<anyOf 1>.d (Unsafe)', 'x.e[/^(.*)$/] (Any)']);
  });
});

for (const style of STYLES) {
  describe(`answers match their OpenAPI schemas (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style });
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);

    it('every parameterless GET answers with a body its documented schema accepts', async () => {
      const org = await createTestOrg('Documented answers');
      const doc = (await request(app).get('/api/v1/openapi.json')).body;
      const paths = Object.keys(doc.paths).filter((p) => p.startsWith('/api/v1/') && !p.includes('{') && doc.paths[p].get && p !== '/api/v1/openapi.json');
      expect(paths).to.include.members(['/api/v1/config', '/api/v1/organizations', '/api/v1/orders', '/api/v1/address-pool/status']);
      for (const path of paths) {
        const res = await request(app).get(path).set('X-API-Key', org.ownerKey);
        expect(res.status, `${path}: ${JSON.stringify(res.body)}`).to.equal(200);
        const content = doc.paths[path].get.responses['200'].content;
        // A CSV download (GET /exports/*.csv) is documented as text/csv and answers so.
        if (content['text/csv']) {
          expect(res.headers['content-type'], path).to.match(/^text\/csv/);
          continue;
        }
        const schema = content['application/json'].schema;
        const valid = ajv.validate(schema, res.body);
        expect(valid, `${path}: ${ajv.errorsText()}`).to.equal(true);
      }
    });
  });
}
