import express, { type NextFunction, type Request, type Response } from 'express';
import type { TObject, TSchema } from '@sinclair/typebox';
import type { Caller } from '../core/organizations/organizations';
import type { Role } from '../core/organizations/roles';
import { withSuccessFalse, type WireFormat, type Page } from './format';
import { EMPTY_QUERY, rejectUnstorableValues, validateBody, validateQuery } from './validation';
import type { ApiDeps } from './deps';
import { authenticateRequest, requireRole } from './middleware/auth';
import { applyIdempotencyKey } from './middleware/idempotency';
import { createRateLimiter, type RateLimiter } from './middleware/rate-limit';
import { sendJson } from './answer';
import { sendCsvDownload } from './csv-answer';
import type { CsvDownload } from '../core/exports/csv-download';

/**
 * Declares an API route once: the same declaration mounts it on Express (auth, role, body limit,
 * validation, idempotency), describes it in the OpenAPI document and, through its TypeBox
 * schemas and path, types the handler's body, query, params and answer (docs/layout.md: where a new route goes).
 */
export interface RouteSpec<
  P extends string = string,
  B extends TSchema | undefined = TSchema | undefined,
  Q extends TObject | undefined = TObject | undefined,
  R extends TSchema | undefined = TSchema | undefined,
> {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Express path relative to /api/v1, e.g. `/orders/:orderId`. */
  path: P;
  summary: string;
  description?: string;
  tag: string;
  /** Lowest role allowed. */
  minRole: Role;
  body?: B;
  query?: Q;
  /** Creating POSTs honour Idempotency-Key. */
  creates?: boolean;
  /** Its 400 answers carry `success: false` in both styles (the spec's pool import). */
  failuresCarrySuccess?: boolean;
  /** Body size limit for this route (defaults to the deployment's). */
  bodyLimitBytes?: number;
  /** Status of a successful answer (documentation). */
  successStatus?: number;
  /** Schema of the resource in a success answer (of one item for a list); types reply.ok/created/list. */
  response?: R;
  /** Name of the array in a list answer (A: data.<plural>); marks the route as a list. */
  listOf?: string;
  /** The success answer is a CSV download (reply.csv), not JSON; errors stay in the deployment's format. */
  produces?: 'text/csv';
}

export interface Reply {
  status: number;
  body: unknown;
}

/** A CSV file streamed from the database (core/exports/), for routes that declare `produces: 'text/csv'`. */
export interface DownloadReply {
  status: 200;
  download: CsvDownload;
}

/** `:name` segments of an Express path as an object of strings: `/a/:id/b/:key` → {id; key}. */
export type PathParams<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? { [K in Name]: string } & PathParams<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? { [K in Name]: string }
    : Record<never, string>;

/** What a validated schema leaves: the schema's static type, or nothing when the route has none. */
export type Validated<S extends TSchema | undefined> = S extends TSchema ? S['static'] : undefined;
/** A validated query: always an object (no schema: no parameters). */
export type ValidatedQuery<Q extends TObject | undefined> = Q extends TObject ? Q['static'] : Record<never, never>;
/** The wire object a route answers with: its response schema's type (unknown when undocumented). */
export type Answer<R extends TSchema | undefined> = R extends TSchema ? R['static'] : unknown;

/** What a route handler sees of the Express request: everything but the unvalidated inputs. */
export type EdgeRequest = Omit<Request, 'body' | 'query' | 'params'>;

export interface RouteInput<P extends string, B, Q, D> {
  caller: Caller;
  body: B;
  query: Q;
  params: PathParams<P>;
  /**
   * The request for what the schemas do not cover (headers, ip). Without its raw body, query and
   * params (Express types them `any`): a handler reaches those only validated and typed, above.
   */
  req: EdgeRequest;
  /** Reply builders in the deployment's wire format. */
  reply: ReplyBuilder<D>;
}

export interface ReplyBuilder<D> {
  ok(data: D, message?: string): Reply;
  created(data: D, message?: string): Reply;
  list(plural: string, items: D[], page: Page): Reply;
  /** A body already shaped by the formatting module or a presenter (per-style shapes). */
  raw(status: number, body: unknown): Reply;
  /** A CSV download, sent batch by batch after the handler returns. */
  csv(download: CsvDownload): DownloadReply;
}

export type RouteHandler<P extends string, B, Q, D> = (input: RouteInput<P, B, Q, D>) => Promise<Reply | DownloadReply> | Reply | DownloadReply;

export function replyBuilder(format: WireFormat): ReplyBuilder<unknown> {
  return {
    ok: (data, message) => ({ status: 200, body: format.body(data, message) }),
    created: (data, message = 'Created') => ({ status: 201, body: format.body(data, message) }),
    list: (plural, items, page) => ({ status: 200, body: format.listBody(plural, items, page) }),
    raw: (status, body) => ({ status, body }),
    csv: (download) => ({ status: 200, download }),
  };
}

/** Where routes are mounted: the Express app itself (see ApiBuilder). */
type RouteTarget = Pick<express.Express, 'get' | 'post' | 'put' | 'delete'>;

export class ApiBuilder {
  readonly routes: RouteSpec[] = [];
  private readonly reply: ReplyBuilder<unknown>;
  private readonly rateLimiter: RateLimiter | null;

  /**
   * Routes go on `target` at `prefix` + their path, not on a router mounted at the prefix: a
   * mounted router dispatches every request a second time and rewrites and restores req.url
   * around it (and the URL is parsed again), work each API request paid for nothing.
   */
  constructor(
    private readonly deps: ApiDeps,
    /** The deployment's wire format, for presenters of per-style shapes. */
    readonly format: WireFormat,
    private readonly target: RouteTarget,
    private readonly prefix: string,
  ) {
    this.reply = replyBuilder(format);
    this.rateLimiter = createRateLimiter(deps);
  }

  /**
   * Mounts the route as one Express handler that runs its steps in order: authenticate, rate
   * limit, role, body, Idempotency-Key, storable values, validation, the handler, the answer.
   * One layer rather than one per step: each Express layer costs a dispatch through the router
   * on every request, and the steps are this route's alone. Any failure goes to the app's error
   * handler, which answers in the deployment's format.
   */
  route<const P extends string, B extends TSchema | undefined = undefined, Q extends TObject | undefined = undefined, R extends TSchema | undefined = undefined>(
    spec: RouteSpec<P, B, Q, R>,
    handler: RouteHandler<P, Validated<B>, ValidatedQuery<Q>, Answer<R>>,
  ): void {
    this.routes.push(spec);
    const { deps, reply, rateLimiter } = this;
    const parseBody =
      spec.method === 'post' || spec.method === 'put'
        ? jsonBodyParser(spec.bodyLimitBytes ?? deps.config.bodyLimitBytes)
        : null;
    const query = spec.query ?? EMPTY_QUERY;
    this.target[spec.method](`${this.prefix}${spec.path}`, async (req: Request, res: Response, next: NextFunction) => {
      try {
        const caller = await authenticateRequest(deps, req, res);
        if (rateLimiter) await rateLimiter(caller, res, spec);
        requireRole(caller, spec.minRole);
        if (parseBody) await parseBody(req, res);
        if (spec.creates && (await applyIdempotencyKey(deps, req, res, caller)) === 'replayed') return;
        rejectUnstorableValues('path', req.params);
        rejectUnstorableValues('query', req.query);
        if (spec.body) rejectUnstorableValues('request body', req.body);
        // The casts are the one place where validation turns values into their schemas' types.
        const result = await handler({
          caller,
          body: (spec.body ? validateBody(spec.body, req.body) : undefined) as Validated<B>,
          query: validateQuery(query, req.query) as ValidatedQuery<Q>,
          params: req.params as PathParams<P>,
          req,
          reply: reply as ReplyBuilder<Answer<R>>,
        });
        if ('download' in result) await sendCsvDownload(deps.logger, req, res, result.download);
        else sendJson(res, result.status, result.body);
      } catch (err) {
        next(spec.failuresCarrySuccess ? withSuccessFalse(err) : err);
      }
    });
  }
}

/** express.json as a step: resolves once req.body is parsed, rejects with body-parser's error. */
function jsonBodyParser(limit: number): (req: Request, res: Response) => Promise<void> {
  const parse = express.json({ limit, strict: false, type: () => true });
  return (req, res) => new Promise<void>((resolve, reject) => parse(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
}
