import http from 'node:http';
import type { ServiceContext } from '../core/service/context';
import { createProducerRedis, queuePrefixOf, redisTargetOf, waitForRedis } from '../core/platform/redis';
import { checkRedisFitForQueues } from '../core/platform/redis-eviction';
import { closeQueues, createQueues, type Queues } from '../core/jobs/catalog';
import { bullJobQueue } from '../core/jobs/bullmq-job-queue';
import { createApp } from './app';
import { answerClientError } from './client-errors';
import { WireFormat } from './format';
import { createKeyCache } from './deps';
import { PaymentPageCache, listenForPaymentPageChanges } from '../core/orders/payment-page-cache';

export interface RunningApi {
  server: http.Server;
  port: number;
  /** The job queues this process enqueues to (the metrics server reads their depths). */
  queues: Queues;
  /** Logs "API listening" (done by startApi unless told to wait until every port is bound). */
  announce(): void;
  /** From now on GET /health may answer 200 (startApi's default; `npm start` waits for its first-start work). */
  markReady(): void;
  /** Starts the drain at once (the signal's arrival): no new connections, every answer closes its connection. */
  drain(): void;
  /** Drains (if not begun) and waits for in-flight requests; at `deadline` the connections left are destroyed. */
  close(deadline?: AbortSignal): Promise<void>;
}

export interface StartApiOptions {
  /** Log "API listening" at once (default true); false: the caller calls announce() once every port is bound. */
  announce?: boolean;
  /** Ready at once (default true); false: /health answers 503 "starting" until markReady(). */
  ready?: boolean;
}

/** Starts the HTTP tier on the configured port. */
export async function startApi(ctx: ServiceContext, options: StartApiOptions = {}): Promise<RunningApi> {
  const redis = createProducerRedis(redisTargetOf(ctx.config));
  await waitForRedis(redis);
  await checkRedisFitForQueues(redis, ctx);
  const queues = createQueues(redis, queuePrefixOf(ctx.config));
  // Without listeners BullMQ prints every reconnect error of a Redis outage to stderr: one
  // structured warning per outage instead (requests meanwhile get their 503s).
  let redisDown = false;
  const onRedisError = (err: Error) => {
    if (!redisDown) ctx.logger.warn({ err: { message: err.message } }, 'Redis unreachable; job submissions fail until it returns');
    redisDown = true;
  };
  redis.on('error', onRedisError);
  for (const queue of Object.values(queues)) queue.on('error', onRedisError);
  redis.on('ready', () => {
    if (redisDown) ctx.logger.info('Redis connection restored');
    redisDown = false;
  });
  // The public pages' per-IP limiter on a connection of its own (ApiDeps.pageLimitRedis).
  const pageLimitRedis = createProducerRedis(redisTargetOf(ctx.config), { autoPipelining: true });
  pageLimitRedis.on('error', onRedisError);
  await waitForRedis(pageLimitRedis);
  const keyCache = createKeyCache(ctx);
  // The status endpoint's memory of open orders, kept honest by a LISTEN connection of its own.
  const paymentPages = new PaymentPageCache();
  const pageListener = await listenForPaymentPageChanges({ databaseUrl: ctx.config.databaseUrl, db: ctx.db }, paymentPages, ctx.logger);
  // Jobs go out on the API's own fail-fast connection: a request gets an answer, not a hang.
  const readiness = { ready: options.ready ?? true };
  const app = createApp(ctx.config, { ...ctx, redis, pageLimitRedis, queues, jobs: bullJobQueue(queues), keyCache, paymentPages, readiness });
  const server = http.createServer(app);
  server.on('clientError', answerClientError(new WireFormat(ctx.config.apiStyle)));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(ctx.config.port, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : ctx.config.port;
  const announce = () => ctx.logger.info({ port, style: ctx.config.apiStyle, network: ctx.config.network }, `API listening on http://localhost:${port}`);
  if (options.announce ?? true) announce();
  const drain = drainer(server);
  return {
    server,
    port,
    queues,
    announce,
    markReady() {
      readiness.ready = true;
    },
    drain: drain.begin,
    async close(deadline) {
      await drain.finished(deadline, () => ctx.logger.warn({ open: drain.open() }, 'shutdown deadline: closing the HTTP connections still open'));
      await closeQueues(queues);
      await keyCache.close();
      await pageListener.close();
      redis.disconnect();
      pageLimitRedis.disconnect();
    },
  };
}

/** How often idle kept-alive connections are closed while draining (a request that was in flight ends idle). */
const IDLE_SWEEP_MS = 100;

/**
 * Shutdown of an HTTP server under kept-alive connections. server.close() alone stops new
 * connections but serves every request still arriving on open ones: a client (a load balancer's
 * upstream pool) sending back to back keeps the process up indefinitely. Draining, each answer
 * carries `Connection: close` (Node then ends the socket after it), idle sockets are closed as
 * they become idle, and whatever is still open at the deadline is destroyed.
 */
function drainer(server: http.Server): { begin(): void; finished(deadline: AbortSignal | undefined, onForce: () => void): Promise<void>; open(): number } {
  let closed: Promise<void> | null = null;
  let sweep: NodeJS.Timeout | null = null;
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const begin = () => {
    if (closed) return;
    // Before the app's listener: an answer written synchronously (the status endpoint) closes too.
    server.prependListener('request', (_req, res: http.ServerResponse) => {
      if (!res.headersSent) res.setHeader('Connection', 'close');
    });
    closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  };
  return {
    begin,
    open: () => sockets.size,
    async finished(deadline, onForce) {
      begin();
      const force = () => {
        onForce();
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      };
      if (deadline?.aborted) force();
      else deadline?.addEventListener('abort', force, { once: true });
      try {
        await closed;
      } finally {
        deadline?.removeEventListener('abort', force);
        if (sweep) clearInterval(sweep);
      }
    },
  };
}
