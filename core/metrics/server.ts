import http from 'node:http';
import type { ServiceContext } from '../service/context';
import { constantTimeEqual } from '../platform/secrets';
import { scrapeTimeRegistry, type CountableQueue } from './collectors';
import { processMetrics } from '../platform/metrics';

export interface RunningMetrics {
  port: number;
  close(): Promise<void>;
}

/**
 * GET /metrics on METRICS_PORT, never on the API's port (the API faces the internet; metrics
 * name chains, providers and queues). Bound to 127.0.0.1 unless METRICS_TOKEN is set; then it
 * listens on every interface and answers only with `Authorization: Bearer <token>`.
 */
export async function startMetricsServer(ctx: ServiceContext, queues: CountableQueue[]): Promise<RunningMetrics> {
  const { port, token } = ctx.config.metrics;
  const { registry } = processMetrics();
  const scraped = scrapeTimeRegistry(ctx, queues);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: the metrics are at GET /metrics\n');
      return;
    }
    if (token) {
      const given = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
      if (!constantTimeEqual(given, token)) {
        res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="metrics"' }).end('Bearer token required\n');
        return;
      }
    }
    Promise.all([registry.metrics(), scraped.metrics()]).then(([counters, gauges]) => `${counters}\n${gauges}`).then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: Error) => {
        ctx.logger.warn({ err: { message: err.message } }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? Object.assign(new Error(`METRICS_PORT ${port} is already in use (another Stablegate process on this host? give each its own METRICS_PORT)`), { code: 'EADDRINUSE', port }) : err),
    );
    if (token) server.listen(port, resolve);
    else server.listen(port, '127.0.0.1', resolve);
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  ctx.logger.info({ port: bound, host: token ? 'all interfaces (bearer token)' : '127.0.0.1' }, `metrics on http://${token ? '<host>' : '127.0.0.1'}:${bound}/metrics`);
  return {
    port: bound,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
