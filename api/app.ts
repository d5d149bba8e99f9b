import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Config } from '../core/platform/config';
import { AppError } from '../core/platform/errors';
import { SERVICE_VERSION } from '../core/platform/version';
import { BULL_BOARD_PATH, bullBoardRouter } from './bull-board';
import type { ApiDeps } from './deps';
import { WireFormat } from './format';
import { healthHandler } from './health';
import { buildOpenApi } from './openapi';
import { mountDocs } from './docs-page';
import { ApiBuilder } from './route-kit';
import { logRequestError, logRequestWarning, requestLogger } from './request-log';
import { registerRoutes } from './routes';
import { httpMetrics } from './http-metrics';
import { securityHeaderSetter } from './security-headers';
import { mountPublicPages } from './pages';
import { databaseOutageError } from './database-outage';
import { MAX_URL_LENGTH } from './client-errors';
import { compileTrustProxy } from './client-ip';

/**
 * The HTTP app: a request listener (http.createServer(app), supertest) that answers the status
 * endpoint's early path or hands the request to the Express app.
 */
export interface App {
  (req: IncomingMessage, res: ServerResponse): void;
  /** Every declared /api/v1 route (the OpenAPI source; tests walk it). */
  routeTable: ApiBuilder['routes'];
  /** The Express app behind the early path: every request but the status endpoint's canonical form. */
  express: express.Express;
}

/**
 * Middlewares every request goes through, in order, as one Express layer: each layer of its own
 * costs a router dispatch (path match, next()) on every request, for steps that only prepare the
 * response and go on. A step's error goes to the error handler as from any layer.
 */
export function inOneLayer(...steps: RequestHandler[]): RequestHandler {
  return (req, res, next) => {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err) return next(err);
      const current = steps[i++];
      if (current) current(req, res, step);
      else next();
    };
    step();
  };
}

/** Builds the HTTP app. It does not listen: entry points and supertest do. */
export function createApp(config: Config, deps: ApiDeps): App {
  const app = express();
  app.disable('x-powered-by');
  // Every answer is per-request JSON: hashing each body for an ETag buys nothing.
  app.set('etag', false);
  // Who may tell us the client's IP (per-IP limits of the public pages): TRUST_PROXY, default nobody.
  // Compiled once; req.ip and the status endpoint's early path both use it.
  const trustProxy = compileTrustProxy(config.trustProxy);
  app.set('trust proxy', trustProxy);
  const format = new WireFormat(config.apiStyle);

  const securityHeaders = securityHeaderSetter({ https: config.publicBaseUrl.startsWith('https://') });
  app.use(
    inOneLayer(httpMetrics(), requestLogger(deps.logger), (req, res, next) => {
      securityHeaders(res);
      next(req.url.length > MAX_URL_LENGTH ? new AppError('URI_TOO_LONG', `The request URL is longer than ${MAX_URL_LENGTH} characters`) : undefined);
    }),
  );

  app.get('/health', healthHandler(deps));
  // The public pages (/static, /pay) before the API's routes: their paths never meet, and a page
  // request then does not walk every /api/v1 route layer first.
  const { payStatus, notFoundPage } = mountPublicPages(app, deps, { securityHeaders, trustProxy });

  const api = new ApiBuilder(deps, format, app, '/api/v1');
  registerRoutes(api, deps);
  const openapi = buildOpenApi(api.routes, { version: SERVICE_VERSION, style: config.apiStyle, publicBaseUrl: config.publicBaseUrl });
  app.get('/api/v1/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  mountDocs(app, openapi, config.publicBaseUrl);

  app.use('/api/v1', (_req, _res, next) => next(new AppError('RESOURCE_NOT_FOUND', 'No such endpoint')));
  app.use(BULL_BOARD_PATH, bullBoardRouter(deps));
  // Any other path: a browser gets the public pages' not-found page, any other client the error format.
  app.use((req, res, next) => {
    if (req.accepts(['json', 'html']) === 'html') notFoundPage(req, res, next);
    else next(new AppError('RESOURCE_NOT_FOUND', 'No such path'));
  });

  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const appError = toAppError(err, req);
    if (appError.code === 'NO_AVAILABLE_ADDRESSES' || appError.code === 'SERVICE_UNAVAILABLE') {
      logRequestWarning(deps.logger, res, { code: appError.code, retryAfter: appError.extra?.retryAfter }, appError.message);
    } else if (appError.status >= 500) {
      logRequestError(deps.logger, req, res, err);
    }
    if (res.headersSent) return;
    // A temporary condition says when to come back (the body carries it as retryAfter too).
    if (typeof appError.extra?.retryAfter === 'number') res.setHeader('Retry-After', String(appError.extra.retryAfter));
    format.sendError(res, appError);
  });

  // GET /pay/<token>/status, every open payment page's poll, is answered before the router
  // (api/pages/pay/status-endpoint.ts); everything else, its other forms included, goes to Express.
  const listener = ((req: IncomingMessage, res: ServerResponse) => {
    if (!payStatus(req, res)) app(req, res);
  }) as App;
  listener.routeTable = api.routes;
  listener.express = app;
  return listener;
}

/** Body-parser and unknown errors mapped to the public error codes, in one place. */
function toAppError(err: unknown, req: Request): AppError {
  if (err instanceof AppError) return err;
  const outage = databaseOutageError(err);
  if (outage) return outage;
  const e = err as { type?: string; status?: number; message?: string; limit?: number; length?: number };
  if (e?.type === 'entity.parse.failed') {
    // A form or text body is not "malformed JSON" to its sender: it was never JSON.
    const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (type && !/^application\/([a-z0-9.+-]*\+)?json$/.test(type)) {
      return new AppError('INVALID_JSON', `Request body must be JSON: send Content-Type: application/json with a JSON body (got ${type})`, [
        { field: '(body)', message: `must be JSON, not ${type}` },
      ]);
    }
    return new AppError('INVALID_JSON', 'Malformed JSON in request body');
  }
  if (e?.type === 'entity.too.large') {
    const limit = typeof e.limit === 'number' ? e.limit : null;
    const size = typeof e.length === 'number' && Number.isFinite(e.length) ? ` (${e.length} bytes)` : '';
    return new AppError(
      'PAYLOAD_TOO_LARGE',
      limit === null ? 'Request body is larger than this endpoint accepts' : `Request body${size} is larger than this endpoint accepts: at most ${limit} bytes`,
      undefined,
      limit === null ? undefined : { limitBytes: limit },
    );
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') return new AppError('VALIDATION_ERROR', e.message ?? 'Unsupported body encoding');
  if (e?.status && e.status >= 400 && e.status < 500) return new AppError('VALIDATION_ERROR', e.message ?? 'Bad request');
  return new AppError('INTERNAL_ERROR', 'Internal server error');
}
