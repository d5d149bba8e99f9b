import http from 'node:http';
import type { ServiceContext } from '../core/service/context';
import { createProducerRedis, waitForRedis } from '../core/platform/redis';
import { checkRedisFitForQueues } from '../core/platform/redis-eviction';
import { closeQueues, createQueues, type Queues } from '../core/jobs/catalog';
import { bullJobQueue } from '../core/jobs/bullmq-job-queue';
import { createApp } from './app';
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
  close(): Promise<void>;
}

export interface StartApiOptions {
  /** Log "API listening" at once (default true); false: the caller calls announce() once every port is bound. */
  announce?: boolean;
  /** Ready at once (default true); false: /health answers 503 "starting" until markReady(). */
  ready?: boolean;
}

/** Starts the HTTP tier on the configured port. */
export async function startApi(ctx: ServiceContext, options: StartApiOptions = {}): Promise<RunningApi> {
  const redis = createProducerRedis(ctx.config.redisUrl);
  await waitForRedis(redis);
  await checkRedisFitForQueues(redis, ctx);
  const queues = createQueues(redis, ctx.config.redisPrefix);
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
  const pageLimitRedis = createProducerRedis(ctx.config.redisUrl, { autoPipelining: true });
  pageLimitRedis.on('error', onRedisError);
  await waitForRedis(pageLimitRedis);
  const keyCache = createKeyCache(ctx);
  // The status endpoint's memory of open orders, kept honest by a LISTEN connection of its own.
  const paymentPages = new PaymentPageCache();
  const pageListener = await listenForPaymentPageChanges(ctx.config.databaseUrl, paymentPages, ctx.logger);
  // Jobs go out on the API's own fail-fast connection: a request gets an answer, not a hang.
  const readiness = { ready: options.ready ?? true };
  const app = createApp(ctx.config, { ...ctx, redis, pageLimitRedis, queues, jobs: bullJobQueue(queues), keyCache, paymentPages, readiness });
  const server = http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(ctx.config.port, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : ctx.config.port;
  const announce = () => ctx.logger.info({ port, style: ctx.config.apiStyle, network: ctx.config.network }, `API listening on http://localhost:${port}`);
  if (options.announce ?? true) announce();
  return {
    server,
    port,
    queues,
    announce,
    markReady() {
      readiness.ready = true;
    },
    async close() {
      // Stop accepting connections and let in-flight requests finish.
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await closeQueues(queues);
      await keyCache.close();
      await pageListener.close();
      redis.disconnect();
      pageLimitRedis.disconnect();
    },
  };
}
