import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiDeps } from '../../deps';
import { writeJson } from '../../answer';
import { routeMetrics } from '../../http-metrics';
import { logRequestError, startRequestLog } from '../../request-log';
import { answerPaymentStatus, pageErrorJson, pageFailure } from './pay-routes';
import { PAY_TOKEN_SOURCE } from '../../../core/orders/pay-token';

/** The route's pattern, as the router's copy of it is labelled in metrics and logged. */
export const STATUS_ROUTE = '/pay/:token/status';
const LOGGED_PATH = '/pay/[token]/status';
/** The endpoint's canonical form: a well-formed token (core/orders/pay-token.ts), any query. */
const STATUS_URL = new RegExp(`^/pay/(${PAY_TOKEN_SOURCE})/status(?:\\?|$)`);

export interface StatusEndpointSteps {
  /** The app-wide headers (api/security-headers.ts), then the public pages' (public-headers.ts). */
  securityHeaders: (res: ServerResponse) => void;
  pageHeaders: (res: ServerResponse) => void;
  /** The client's IP as Express's req.ip gives it (TRUST_PROXY). */
  clientIp: (req: IncomingMessage) => string | undefined;
  /** The per-IP limit: 0 to go on, else the seconds to retry after (ip-rate-limit.ts). */
  limit: (ip: string) => Promise<number>;
}

/**
 * GET /pay/<token>/status answered in front of the Express router. Every open payment page polls
 * it, so it is the public pages' hottest path, and on it the router's work (prototype swaps, URL
 * parsing, walking the layers, next() between steps) was a large share of the API's CPU per
 * request (bench:pages). The same steps as the router's route, in the same order: metrics, request
 * log with X-Request-Id and the token masked, the app-wide and the public pages' headers, the
 * per-IP limit, then the status (pay-routes.ts answerPaymentStatus), errors as the JSON the route
 * answers. Only the canonical form is taken here (GET or HEAD, a well-formed token, no trailing
 * slash); anything else goes on to the router, whose route and not-found page stay as they were.
 *
 * Returns whether it took the request.
 */
export function payStatusEndpoint(deps: ApiDeps, steps: StatusEndpointSteps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const observe = routeMetrics(STATUS_ROUTE);
  const serve = async (req: IncomingMessage, res: ServerResponse, token: string, started: number): Promise<void> => {
    try {
      startRequestLog(deps.logger, req, res, LOGGED_PATH);
      steps.securityHeaders(res);
      steps.pageHeaders(res);
      const retryAfter = await steps.limit(steps.clientIp(req) ?? 'unknown');
      if (retryAfter > 0) {
        res.setHeader('Retry-After', String(retryAfter));
        writeJson(res, 429, pageErrorJson('tooMany'));
      } else {
        await answerPaymentStatus(deps, token, res);
      }
    } catch (err) {
      logRequestError(deps.logger, req, res, err);
      if (!res.headersSent) {
        const failure = pageFailure(err, res);
        writeJson(res, failure.status, pageErrorJson(failure.kind));
      }
    }
    if (res.writableEnded) observe(req.method!, res.statusCode, started);
  };
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const match = STATUS_URL.exec(req.url ?? '');
    if (!match) return false;
    void serve(req, res, match[1], performance.now());
    return true;
  };
}
