import express, { type NextFunction, type Request, type Response } from 'express';
import type { Caller } from '../core/organizations';
import type { Role } from '../core/roles';
import type { WireFormat, Page } from './format';
import { rejectUnstorableValues, validateBody, validateQuery, type JsonSchema } from './validation';
import type { ApiDeps } from './deps';
import { authenticateRequest, requireRole } from './middleware/auth';
import { applyIdempotencyKey } from './middleware/idempotency';
import { createRateLimiter, type RateLimiter } from './middleware/rate-limit';
import { sendJson } from './answer';

/**
 * Declares an API route once: the same declaration mounts it on Express (auth, role, body limit,
 * validation, idempotency) and describes it in the OpenAPI document.
 */
export interface RouteSpec {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Express path relative to /api/v1, e.g. `/orders/:orderId`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  /** Lowest role allowed. */
  minRole: Role;
  body?: JsonSchema;
  query?: JsonSchema;
  /** Creating POSTs honour Idempotency-Key. */
  creates?: boolean;
  /** Body size limit for this route (defaults to the deployment's). */
  bodyLimitBytes?: number;
  /** Status of a successful answer (documentation). */
  successStatus?: number;
  /** Schema of the resource in a success answer (documentation). */
  response?: JsonSchema;
  /** Name of the array in a list answer (A: data.<plural>); marks the route as a list. */
  listOf?: string;
}

export interface Reply {
  status: number;
  body: unknown;
}

export interface RouteInput<B = any, Q = any> {
  caller: Caller;
  body: B;
  query: Q;
  params: Record<string, string>;
  req: Request;
  /** Reply builders in the deployment's wire format. */
  reply: ReplyBuilder;
}

export interface ReplyBuilder {
  ok(data: unknown, message?: string): Reply;
  created(data: unknown, message?: string): Reply;
  list(plural: string, items: unknown[], page: Page): Reply;
  /** A body already shaped by the formatting module (special shapes). */
  raw(status: number, body: unknown): Reply;
}

export type RouteHandler<B = any, Q = any> = (input: RouteInput<B, Q>) => Promise<Reply> | Reply;

export function replyBuilder(format: WireFormat): ReplyBuilder {
  return {
    ok: (data, message) => ({ status: 200, body: format.body(data, message) }),
    created: (data, message = 'Created') => ({ status: 201, body: format.body(data, message) }),
    list: (plural, items, page) => ({ status: 200, body: format.listBody(plural, items, page) }),
    raw: (status, body) => ({ status, body }),
  };
}

/** Where routes are mounted: the Express app itself (see ApiBuilder). */
type RouteTarget = Pick<express.Express, 'get' | 'post' | 'put' | 'delete'>;

export class ApiBuilder {
  readonly routes: RouteSpec[] = [];
  private readonly reply: ReplyBuilder;
  private readonly rateLimiter: RateLimiter | null;

  /**
   * Routes go on `target` at `prefix` + their path, not on a router mounted at the prefix: a
   * mounted router dispatches every request a second time and rewrites and restores req.url
   * around it (and the URL is parsed again), work each API request paid for nothing.
   */
  constructor(
    private readonly deps: ApiDeps,
    format: WireFormat,
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
  route<B = any, Q = any>(spec: RouteSpec, handler: RouteHandler<B, Q>): void {
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
        if (rateLimiter) await rateLimiter(caller, res);
        requireRole(caller, spec.minRole);
        if (parseBody) await parseBody(req, res);
        if (spec.creates && (await applyIdempotencyKey(deps, req, res, caller)) === 'replayed') return;
        rejectUnstorableValues('path', req.params);
        rejectUnstorableValues('query', req.query);
        if (spec.body) rejectUnstorableValues('request body', req.body);
        const result = await handler({
          caller,
          body: spec.body ? validateBody<B>(spec.body, req.body) : (undefined as B),
          query: validateQuery<Q>(query, req.query),
          params: req.params as Record<string, string>,
          req,
          reply,
        });
        sendJson(res, result.status, result.body);
      } catch (err) {
        next(err);
      }
    });
  }
}

/** express.json as a step: resolves once req.body is parsed, rejects with body-parser's error. */
function jsonBodyParser(limit: number): (req: Request, res: Response) => Promise<void> {
  const parse = express.json({ limit, strict: false, type: () => true });
  return (req, res) => new Promise<void>((resolve, reject) => parse(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
}

const EMPTY_QUERY: JsonSchema = { type: 'object', additionalProperties: false, properties: {} };
