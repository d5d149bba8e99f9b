import http from 'node:http';
import type { ServiceContext } from '../service/context';
import { constantTimeEqual } from '../platform/secrets';
import { scrapeTimeRegistry, type CountableQueue } from './collectors';
import { processMetrics } from '../platform/metrics';

export interface RunningMetrics {
  port: number;
  /** True when the default port was busy on NETWORK=local and a free one was taken instead. */
  fellBack: boolean;
  /** Logs where the metrics are (done at once unless told to wait until every port is bound). */
  announce(): void;
  close(): Promise<void>;
}

function listen(server: http.Server, port: number, host: string | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    const done = () => {
      server.off('error', onError);
      resolve();
    };
    if (host) server.listen(port, host, done);
    else server.listen(port, done);
  });
}

/**
 * GET /metrics on METRICS_PORT, never on the API's port (the API faces the internet; metrics
 * name chains, providers and queues). Bound to 127.0.0.1 unless METRICS_TOKEN is set; then it
 * listens on every interface and answers only with `Authorization: Bearer <token>`.
 */
export async function startMetricsServer(ctx: ServiceContext, queues: CountableQueue[], options: { announce?: boolean } = {}): Promise<RunningMetrics> {
  const { port, token, portIsDefault } = ctx.config.metrics;
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
  const host = token ? undefined : '127.0.0.1';
  let fellBack = false;
  try {
    await listen(server, port, host);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    // A developer's second checkout or a running test instance holds the default port: on
    // NETWORK=local take a free one (the banner prints it). A port someone chose stays an error.
    if (!(portIsDefault && ctx.config.network === 'local')) {
      throw Object.assign(new Error(`METRICS_PORT ${port} is already in use (another Stablegate process on this host? give each its own METRICS_PORT)`), { code: 'EADDRINUSE', port });
    }
    await listen(server, 0, host);
    fellBack = true;
  }
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  const announce = () =>
    ctx.logger.info(
      { port: bound, host: token ? 'all interfaces (bearer token)' : '127.0.0.1', ...(fellBack ? { busyDefaultPort: port } : {}) },
      `metrics on http://${token ? '<host>' : '127.0.0.1'}:${bound}/metrics${fellBack ? ` (the default port ${port} is busy; set METRICS_PORT to choose one)` : ''}`,
    );
  if (options.announce ?? true) announce();
  return {
    port: bound,
    fellBack,
    announce,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
