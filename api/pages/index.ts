import type { IncomingMessage, ServerResponse } from 'node:http';
import type express from 'express';
import type { NextFunction, Request, Response } from 'express';
import type { ApiDeps } from '../deps';
import { logRequestError } from '../request-log';
import { ipRateLimit, ipRateLimiter } from './ip-rate-limit';
import { payStatusEndpoint } from './pay/status-endpoint';
import { payRoutes, sendPageError, type PageHandler } from './pay/pay-routes';
import { publicPageHeaders, publicPageHeaderSetter } from './public-headers';
import { ASSETS_PATH, staticAssets } from './static-assets';
import { landingPage } from './landing';

/**
 * The public, browser-facing part of the service (design.md §6a): our static assets and the
 * payment page, behind the public pages' headers and a per-client-IP limit. Wave 3's checkout and
 * dashboard mount their routes here on the same layer.
 *
 * Mounted on the app itself, ahead of the /api/v1 routes (api/app.ts), and each page is one
 * Express layer running its steps (headers, limit, handler, error page) rather than nested
 * routers: every nested router dispatches the request again, rewriting and re-parsing its URL,
 * and a /pay request used to be matched against every /api/v1 route first. On the status
 * endpoint that routing was about a sixth of the API's CPU per request (bench:pages).
 *
 * Returns the status endpoint's handler for its canonical form, which the app runs before its
 * router (api/app.ts; pay/status-endpoint.ts): the same steps without the router's own work.
 */
export function mountPublicPages(
  app: express.Express,
  deps: ApiDeps,
  options: { securityHeaders: (res: ServerResponse) => void },
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const headersConfig = { frameAncestors: deps.config.pages.frameAncestors };
  app.use(ASSETS_PATH, publicPageHeaders(headersConfig), staticAssets());

  const setHeaders = publicPageHeaderSetter(headersConfig);
  // GET /: the landing page (service, version, links), not Express's bare "Cannot GET /".
  app.get('/', (req, res) => {
    setHeaders(res);
    landingPage(req, res);
  });
  const limitOptions = {
    redis: deps.pageLimitRedis,
    keyPrefix: `${deps.config.redisPrefix}:rl:page`,
    perMinute: deps.config.pages.rateLimitPerMinute,
    logger: deps.logger,
  };
  const limit = ipRateLimit({ ...limitOptions, onLimited: (req, res) => sendPageError(req, res, 429, 'tooMany') });
  const page =
    (handler: PageHandler) =>
    async (req: Request<{ token: string }>, res: Response, _next: NextFunction): Promise<void> => {
      setHeaders(res);
      try {
        if (!(await limit(req, res))) return;
        await handler(req, res);
      } catch (err) {
        logRequestError(deps.logger, req, res, err);
        if (!res.headersSent) sendPageError(req, res, 500, 'error');
      }
    };
  for (const { path, handler } of payRoutes(deps)) app.get(path, page(handler));
  // Anything else under /pay (any method): the not-found page, behind the same headers and limit.
  app.use('/pay', page(async (req, res) => sendPageError(req, res, 404, 'notFound')));

  // The status endpoint's canonical form, answered before the router (the app calls it first).
  // Its limit counts under the same Redis key as the pages': one budget per client IP.
  // The client IP exactly as the routed pages get it: Express's req.ip getter (proxy-addr with the
  // app's compiled TRUST_PROXY), read off the prototype the app gives its requests.
  const ipOf = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(app.request), 'ip')!.get!;
  return payStatusEndpoint(deps, {
    securityHeaders: options.securityHeaders,
    pageHeaders: setHeaders,
    clientIp: (req) => ipOf.call({ app, headers: req.headers, socket: req.socket, connection: req.socket }) as string | undefined,
    limit: ipRateLimiter(limitOptions),
  });
}
