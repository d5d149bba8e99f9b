import type { RequestHandler } from 'express';
import { processMetrics } from '../core/metrics/metrics';

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
