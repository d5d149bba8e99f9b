import type { RequestHandler } from 'express';
import { processMetrics } from '../core/platform/metrics';

/**
 * Observes every answer's duration by method, route pattern (`/api/v1/orders/:orderId`, never
 * the raw URL: ids would make a series each) and status. Requests no route matched share one label.
 */
export function httpMetrics(): RequestHandler {
  const { httpDuration } = processMetrics();
  return (req, res, next) => {
    const started = performance.now();
    res.once('finish', () => {
      const pattern = req.route?.path as string | string[] | undefined;
      const route = pattern === undefined ? 'unmatched' : `${req.baseUrl}${Array.isArray(pattern) ? pattern[0] : String(pattern)}`;
      httpDuration.observe({ method: req.method, route, status: String(res.statusCode) }, (performance.now() - started) / 1000);
    });
    next();
  };
}

/**
 * The same observation for a handler that answers outside the router (its route pattern known in
 * advance): `observe` when the answer has been handed to the socket, with the time the request
 * arrived. Requests whose client went away before an answer are not observed, as with the middleware.
 */
export function routeMetrics(route: string): (method: string, status: number, started: number) => void {
  const { httpDuration } = processMetrics();
  return (method, status, started) => {
    httpDuration.observe({ method, route, status: String(status) }, (performance.now() - started) / 1000);
  };
}
