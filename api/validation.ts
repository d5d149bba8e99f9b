import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { Type, type TProperties, type TSchema } from '@sinclair/typebox';
import { StringEnum } from '../core/platform/wire-schema';
import { validationError } from '../core/platform/errors';

/**
 * JSON Schema (the subset we use); the same objects feed ajv and the OpenAPI document. Routes
 * declare theirs with TypeBox (`Type.*`), which builds plain JSON Schema and derives its type.
 */
export type JsonSchema = Record<string, unknown>;

// Bodies: exact types, no coercion. Queries: strings coerced to the declared types.
const bodyAjv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: false, strict: false });
const queryAjv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true, strict: false });
addFormats(bodyAjv);
addFormats(queryAjv);

const cache = new WeakMap<JsonSchema, ValidateFunction>();

function compile(ajv: Ajv, schema: JsonSchema): ValidateFunction {
  let fn = cache.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    cache.set(schema, fn);
  }
  return fn;
}

export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * ajv reports a value that fails an anyOf once per branch plus "must match a schema in anyOf": a
 * too-long metadata string would list every type it is not. One clause instead: the failed
 * constraint of the branch whose type the value has (e.g. "must NOT have more than 500
 * characters"), else one list of the types allowed.
 */
function collapseAnyOf(errors: ErrorObject[]): ErrorObject[] {
  const anyOfs = errors.filter((e) => e.keyword === 'anyOf');
  if (anyOfs.length === 0) return errors;
  // The anyOf errors themselves and their branches' are replaced below.
  const out = errors.filter((e) => !anyOfs.some((a) => e.instancePath === a.instancePath && (e === a || e.schemaPath.startsWith(`${a.schemaPath}/`))));
  for (const a of anyOfs) {
    const branches = errors.filter((e) => e !== a && e.instancePath === a.instancePath && e.schemaPath.startsWith(`${a.schemaPath}/`));
    const constraint = branches.filter((e) => e.keyword !== 'type');
    if (constraint.length > 0) out.push(...constraint);
    else {
      const types = branches.map((e) => (e.params as { type?: string }).type).filter(Boolean);
      out.push({ ...a, keyword: 'type', message: types.length ? `must be ${types.join(', ').replace(/, ([^,]*)$/, ' or $1')}` : a.message });
    }
  }
  return out;
}

function describe(errors: ErrorObject[] | null | undefined): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const e of collapseAnyOf(errors ?? [])) {
    const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    if (e.keyword === 'required') {
      const field = [base, (e.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.');
      problems.push({ field, message: 'is required' });
    } else if (e.keyword === 'additionalProperties') {
      const field = [base, (e.params as { additionalProperty: string }).additionalProperty].filter(Boolean).join('.');
      problems.push({ field, message: 'is not an allowed field' });
    } else if (e.keyword === 'enum') {
      problems.push({ field: base || '(root)', message: `must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}` });
    } else {
      problems.push({ field: base || '(root)', message: e.message ?? 'is invalid' });
    }
  }
  // ajv may report the same problem twice through anyOf/oneOf branches.
  const seen = new Set<string>();
  return problems.filter((p) => {
    const k = `${p.field} ${p.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function fail(where: string, problems: FieldProblem[]): never {
  const summary = problems.map((p) => `${p.field} ${p.message}`).join('; ');
  throw validationError(`Invalid ${where}: ${summary}`, problems);
}

/** ES2024 string methods (Node 20 has them; the TypeScript target here does not declare them). */
type Es2024String = string & { isWellFormed(): boolean; toWellFormed(): string };

/** No NUL character and no half of a surrogate pair without its other half. */
const isStorableText = (text: string) => !text.includes('\u0000') && (text as Es2024String).isWellFormed();
/** The text with those replaced, safe to echo in an error. */
const printable = (text: string) => (text as Es2024String).toWellFormed().replace(/\u0000/g, '\ufffd');

/**
 * Values Postgres cannot store as sent, which would fail the write with a 500 or change silently:
 * NUL characters (text) and unpaired surrogates (jsonb) in any string, key or value, and numbers
 * beyond the double range (JSON `1e400` parses to Infinity, which JSON turns into null). Any such
 * value of a body, query or path is a 400 naming where it is, checked before validation and the
 * handler.
 */
export function rejectUnstorableValues(where: 'request body' | 'query' | 'path', value: unknown): void {
  const problems: FieldProblem[] = [];
  const walk = (v: unknown, path: string): void => {
    if (typeof v === 'string') {
      if (!isStorableText(v)) problems.push({ field: path || '(root)', message: 'must not contain NUL characters or unpaired surrogates' });
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) problems.push({ field: path || '(root)', message: 'must be a finite number' });
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, path ? `${path}.${i}` : String(i)));
    } else if (v !== null && typeof v === 'object') {
      for (const [key, item] of Object.entries(v)) {
        const field = path ? `${path}.${key}` : key;
        if (!isStorableText(key)) problems.push({ field: printable(field), message: 'is a key with NUL characters or unpaired surrogates' });
        else walk(item, field);
      }
    }
  };
  walk(value, '');
  if (problems.length > 0) fail(where, problems.slice(0, 20));
}

/** Validates (and fills defaults into) a JSON body; throws VALIDATION_ERROR listing every problem. */
export function validateBody(schema: JsonSchema, body: unknown): unknown {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    if (schema.type === 'object') {
      throw validationError('Request body must be a JSON object (send Content-Type: application/json)', [
        { field: '(body)', message: 'must be a JSON object' },
      ]);
    }
  }
  const fn = compile(bodyAjv, schema);
  if (!fn(body)) fail('request body', describe(fn.errors));
  return body;
}

/** Validates a query string object (a copy: Express's query is read-only), coercing types. */
export function validateQuery(schema: JsonSchema, query: unknown): unknown {
  const copy: Record<string, unknown> = { ...(query as Record<string, unknown>) };
  for (const [k, v] of Object.entries(copy)) {
    if (Array.isArray(v)) {
      fail('query', [{ field: k, message: 'must be given once' }]);
    }
  }
  const fn = compile(queryAjv, schema);
  if (!fn(copy)) fail('query', describe(fn.errors));
  return copy;
}

// ---------------------------------------------------------------------------
// Schema helpers shared by resources (TypeBox; each keeps the JSON Schema the API always had)
// ---------------------------------------------------------------------------

/** No query parameters at all. */
export const EMPTY_QUERY = Type.Object({}, { additionalProperties: false });

export const MAX_PAGE_LIMIT = 100;
/** Past this, page × limit no longer fits the database's OFFSET (and every such page is empty). */
export const MAX_PAGE = 1_000_000;

/**
 * page and limit of every list query, declared once. Not optional: validation fills their
 * defaults before it checks what is required, so a handler always has both.
 */
export const PAGE_QUERY_PROPERTIES = {
  page: Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1, description: 'Page number, 1-indexed' }),
  limit: Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: 20, description: 'Items per page (max 100)' }),
};

/** A page of a list without sorting choices: page and limit. */
export const pageQuerySchema = <F extends TProperties = Record<never, TSchema>>(filters?: F) =>
  Type.Object({ ...PAGE_QUERY_PROPERTIES, ...(filters ?? ({} as F)) }, { additionalProperties: false });

const SORT_ORDER = StringEnum(['asc', 'desc'], { default: 'desc' });

/** A list query: page, limit, sortBy from a whitelist, sortOrder, plus resource filters. */
export function listQuerySchema<const S extends string, F extends TProperties = Record<never, TSchema>>(options: {
  sortBy: readonly S[];
  defaultSortBy: NoInfer<S>;
  /** desc unless the list has always been oldest first (API keys, webhook endpoints). */
  defaultSortOrder?: 'asc' | 'desc';
  filters?: F;
}) {
  return Type.Object(
    {
      ...PAGE_QUERY_PROPERTIES,
      sortBy: StringEnum(options.sortBy, { default: options.defaultSortBy }),
      sortOrder: options.defaultSortOrder === 'asc' ? StringEnum(['asc', 'desc'], { default: 'asc' }) : SORT_ORDER,
      ...(options.filters ?? ({} as F)),
    },
    { additionalProperties: false },
  );
}

/** A scalar metadata value. */
export type MetadataValue = string | number | boolean | null;

/** Metadata: at most 10 pairs, string keys, scalar values, bounded size. */
export const metadataSchema = Type.Unsafe<Record<string, MetadataValue>>({
  type: 'object',
  maxProperties: 10,
  propertyNames: { type: 'string', minLength: 1, maxLength: 64 },
  additionalProperties: {
    anyOf: [{ type: 'string', maxLength: 500 }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }],
  },
  description: 'Caller data: at most 10 pairs; keys up to 64 characters; values string (≤ 500), number, boolean or null.',
});

