import type { IncomingMessage, ServerResponse } from 'node:http';
import type express from 'express';
import type { NextFunction, Request, Response } from 'express';
import type { ApiDeps } from '../deps';
import { logRequestError } from '../request-log';
import { clientIpOf, type TrustProxy } from '../client-ip';
import { ipRateLimit, ipRateLimiter } from './ip-rate-limit';
import { payStatusEndpoint } from './pay/status-endpoint';
import { pageFailure, payRoutes, sendPageError, type PageHandler } from './pay/pay-routes';
import { routeChoiceHandler } from './pay/route-choice';
import { alertConfirmRoutes } from './alerts/confirm-routes';
import { publicPageHeaders, publicPageHeaderSetter } from './public-headers';
import { ASSETS_PATH, staticAssets } from './static-assets';
import { landingPage } from './landing';
import { checkoutRoutes } from './checkout/checkout-routes';
import { refundClaimRoutes } from './refund/refund-routes';
import { mountDashboard } from './dashboard';

/**
 * The public, browser-facing part of the service (design.md §6a): our static assets and the
 * payment page and the payment links' checkout (/l/<slug>), behind the public pages' headers and a
 * per-client-IP limit. Wave 3's dashboard mounts its routes here on the same layer.
 *
 * Mounted on the app itself, ahead of the /api/v1 routes (api/app.ts), and each page is one
 * Express layer running its steps (headers, limit, handler, error page) rather than nested
 * routers: every nested router dispatches the request again, rewriting and re-parsing its URL,
 * and a /pay request used to be matched against every /api/v1 route first: on the status
 * endpoint a large share of the API's CPU per request (bench:pages; scripts/bench/FINDINGS.md).
 *
 * Returns the status endpoint's handler for its canonical form, which the app runs before its
 * router (api/app.ts; pay/status-endpoint.ts): the same steps without the router's own work; and
 * the not-found page, which the app also gives a browser for any path it does not know.
 */
export function mountPublicPages(
  app: express.Express,
  deps: ApiDeps,
  options: { securityHeaders: (res: ServerResponse) => void; trustProxy: TrustProxy },
): { payStatus: (req: IncomingMessage, res: ServerResponse) => boolean; notFoundPage: express.RequestHandler } {
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
        if (!res.headersSent) {
          const failure = pageFailure(err, res);
          sendPageError(req, res, failure.status, failure.kind);
        }
      }
    };
  for (const { path, handler } of payRoutes(deps)) app.get(path, page(handler));
  // A USD order's payer picks or switches its route (issue 41; the public write kit as the checkout).
  app.post('/pay/:token/route', page(routeChoiceHandler(deps)));
  for (const { method, path, handler } of alertConfirmRoutes(deps)) app[method](path, page(handler));
  // Anything else under /pay (any method): the not-found page, behind the same headers and limit.
  const notFoundPage = page(async (req, res) => sendPageError(req, res, 404, 'notFound'));
  app.use('/pay', notFoundPage);
  // Payment links' checkout (its posts go through the public write kit, api/pages/public-write/).
  for (const { method, path, handler } of checkoutRoutes(deps)) app[method](path, page(handler as unknown as PageHandler));
  app.use('/l', notFoundPage);
  // Refund claim pages (issue 42; the public write kit as the checkout).
  for (const { method, path, handler } of refundClaimRoutes(deps)) app[method](path, page(handler));
  app.use('/refund', notFoundPage);
  mountDashboard(app, deps, { setHeaders });

  // The status endpoint's canonical form, answered before the router (the app calls it first).
  // Its limit counts under the same Redis key as the pages': one budget per client IP.
  // The client IP exactly as the routed pages get it (req.ip): proxy-addr with the app's compiled TRUST_PROXY.
  const payStatus = payStatusEndpoint(deps, {
    securityHeaders: options.securityHeaders,
    pageHeaders: setHeaders,
    clientIp: (req) => clientIpOf(req, options.trustProxy),
    limit: ipRateLimiter(limitOptions),
  });
  return { payStatus, notFoundPage: notFoundPage as unknown as express.RequestHandler };
}
