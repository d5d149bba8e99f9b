import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Caller } from '../core/organizations';
import type { Role } from '../core/roles';
import type { WireFormat, Page } from './format';
import { rejectUnstorableValues, validateBody, validateQuery, type JsonSchema } from './validation';
import type { ApiDeps } from './deps';
import { authenticate, requireRole } from './middleware/auth';
import { idempotency } from './middleware/idempotency';
import { rateLimit } from './middleware/rate-limit';

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

export class ApiBuilder {
  readonly routes: RouteSpec[] = [];
  readonly router: Router = express.Router();
  private readonly reply: ReplyBuilder;

  constructor(private readonly deps: ApiDeps, private readonly format: WireFormat) {
    this.reply = replyBuilder(format);
  }

  route<B = any, Q = any>(spec: RouteSpec, handler: RouteHandler<B, Q>): void {
    this.routes.push(spec);
    const { deps } = this;
    const chain: RequestHandler[] = [authenticate(deps), rateLimit(deps), requireRole(spec.minRole)];
    if (spec.method === 'post' || spec.method === 'put') {
      chain.push(express.json({ limit: spec.bodyLimitBytes ?? deps.config.bodyLimitBytes, strict: false, type: () => true }));
    }
    if (spec.creates) chain.push(idempotency(deps));
    chain.push(async (req: Request, res: Response, next: NextFunction) => {
      try {
        rejectUnstorableValues('path', req.params);
        rejectUnstorableValues('query', req.query);
        if (spec.body) rejectUnstorableValues('request body', req.body);
        const body = spec.body ? validateBody<B>(spec.body, req.body) : (undefined as B);
        const query = validateQuery<Q>(spec.query ?? EMPTY_QUERY, req.query);
        const result = await handler({
          caller: res.locals.caller as Caller,
          body,
          query,
          params: req.params as Record<string, string>,
          req,
          reply: this.reply,
        });
        res.status(result.status).json(result.body);
      } catch (err) {
        next(err);
      }
    });
    this.router[spec.method](spec.path, ...chain);
  }
}

const EMPTY_QUERY: JsonSchema = { type: 'object', additionalProperties: false, properties: {} };
