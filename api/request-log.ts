import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from '../core/platform/logger';
import { newId } from '../core/platform/ids';
import { maskPublicTokens } from './pages/log-mask';

/** Fields the auth middleware adds to the request's log line once the caller is known. */
export interface RequestLogFields {
  organizationId?: string;
  keyId?: string;
}

interface RequestLogState {
  /** Level of the line when not the default (an expected, temporary failure is a warning). */
  level?: 'info' | 'warn';
  id: string;
  method: string;
  url: string;
  fields: RequestLogFields;
}

const STATE = Symbol('requestLog');

/**
 * One structured line per request, written when the response finishes (or the client goes away):
 * request id, method, path without the query, status, response time, and the caller once known.
 * Only safe fields: never headers (keys) nor bodies (secrets).
 *
 * Written here rather than with pino-http: its per-request child logger serializes and redacts
 * the request's bindings on every request, even at a level that writes nothing, which cost about
 * a sixth of an order creation's CPU time.
 */
export function requestLogger(logger: Logger): RequestHandler {
  return (req, res, next) => {
    startRequestLog(logger, req, res, maskPublicTokens(String(req.url).split('?')[0]));
    next();
  };
}

/**
 * The request log's work for one request, for handlers that answer outside the Express router
 * (api/pages/pay/status-endpoint.ts) as for the middleware: the X-Request-Id header, and the line
 * written when the response closes. `url` is the path to log, tokens already masked. With the
 * logger silent, no line could be written and none is waited for (a listener per request less).
 */
export function startRequestLog(logger: Logger, req: IncomingMessage, res: ServerResponse, url: string): void {
  const started = performance.now();
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && /^[A-Za-z0-9._-]{1,100}$/.test(incoming) ? incoming : newId('req');
  res.setHeader('X-Request-Id', id);
  const state: RequestLogState = { id, method: req.method ?? 'GET', url, fields: {} };
  (res as ServerResponse & { [STATE]?: RequestLogState })[STATE] = state;
  // The line's levels are info, warn and error: with none of them written, nothing to wait for.
  if (!logger.isLevelEnabled('error')) return;

  // A response emits 'close' once, after it finished or when the client went away first.
  res.once('close', () => {
    const aborted = !res.writableFinished;
    const level = aborted ? 'warn' : (state.level ?? (res.statusCode >= 500 ? 'error' : 'info'));
    if (!logger.isLevelEnabled(level)) return;
    logger[level](
      {
        ...state.fields,
        req: { id: state.id, method: state.method, url: state.url },
        res: { statusCode: res.statusCode },
        responseTime: Math.round(performance.now() - started),
      },
      aborted ? 'request aborted' : 'request completed',
    );
  });
}

function stateOf(res: ServerResponse): RequestLogState | undefined {
  return (res as ServerResponse & { [STATE]?: RequestLogState })[STATE];
}

/** Adds fields to this request's log line (and to errors logged for it). */
export function addRequestLogFields(res: Response, fields: RequestLogFields): void {
  const state = stateOf(res);
  if (state) Object.assign(state.fields, fields);
}

/**
 * The level of this request's line when its status is an expected answer rather than a fault
 * (/health's 503 while starting or with a dependency down: the body says what is wrong).
 */
export function setRequestLogLevel(res: ServerResponse, level: 'info' | 'warn'): void {
  const state = stateOf(res);
  if (state) state.level = level;
}

/**
 * Logs a failure that is the deployment's state, not a fault (an empty address pool: the operator
 * or merchant must act, the service is fine) as a warning, and the request's line with it.
 */
export function logRequestWarning(logger: Logger, res: Response, fields: Record<string, unknown>, message: string): void {
  const state = stateOf(res);
  if (state) state.level = 'warn';
  logger.warn({ ...state?.fields, ...fields, req: state ? { id: state.id, method: state.method, url: state.url } : undefined }, message);
}

/** Logs a failure of this request, with its id and caller. */
export function logRequestError(logger: Logger, req: Request | IncomingMessage, res: ServerResponse, err: unknown): void {
  const state = stateOf(res);
  const url = (req as Request).originalUrl ?? req.url;
  logger.error({ ...state?.fields, err, req: { id: state?.id, method: req.method, url: maskPublicTokens(String(url).split('?')[0]) } }, 'request failed');
}
