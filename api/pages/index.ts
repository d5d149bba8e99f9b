import express, { type NextFunction, type Request, type Response } from 'express';
import type { ApiDeps } from '../deps';
import { logRequestError } from '../request-log';
import { ipRateLimit } from './ip-rate-limit';
import { payRoutes, sendPageError } from './pay/pay-routes';
import { publicPageHeaders } from './public-headers';
import { ASSETS_PATH, staticAssets } from './static-assets';

/**
 * The public, browser-facing part of the service (design.md §6a): our static assets and the
 * payment page, behind the public pages' headers and a per-client-IP limit. Wave 3's checkout and
 * dashboard mount their routes here on the same layer.
 */
export function publicPages(deps: ApiDeps): express.Router {
  const router = express.Router();
  const headers = publicPageHeaders({ frameAncestors: deps.config.pages.frameAncestors });
  router.use(ASSETS_PATH, headers, staticAssets());

  const pages = express.Router();
  pages.use(headers);
  pages.use(
    ipRateLimit({
      redis: deps.redis,
      keyPrefix: `${deps.config.redisPrefix}:rl:page`,
      perMinute: deps.config.pages.rateLimitPerMinute,
      logger: deps.logger,
      onLimited: (req, res) => sendPageError(req, res, 429, 'tooMany'),
    }),
  );
  pages.use(payRoutes(deps));
  pages.use((req: Request, res: Response) => sendPageError(req, res, 404, 'notFound'));
  pages.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    logRequestError(deps.logger, req, res, err);
    if (!res.headersSent) sendPageError(req, res, 500, 'error');
  });
  router.use('/pay', pages);
  return router;
}
