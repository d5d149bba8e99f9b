import http from 'node:http';
import type { ServiceContext } from '../core/service/context';
import { createProducerRedis, queuePrefixOf, redisTargetOf, waitForRedis } from '../core/platform/redis';
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
  close(): Promise<void>;
}

/** Starts the HTTP tier on the configured port. */
export async function startApi(ctx: ServiceContext): Promise<RunningApi> {
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
  const pageListener = await listenForPaymentPageChanges(ctx.config.databaseUrl, paymentPages, ctx.logger);
  // Jobs go out on the API's own fail-fast connection: a request gets an answer, not a hang.
  const app = createApp(ctx.config, { ...ctx, redis, pageLimitRedis, queues, jobs: bullJobQueue(queues), keyCache, paymentPages });
  const server = http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(ctx.config.port, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : ctx.config.port;
  ctx.logger.info({ port, style: ctx.config.apiStyle, network: ctx.config.network }, `API listening on http://localhost:${port}`);
  return {
    server,
    port,
    queues,
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
