import type { RedisClient } from '../core/platform/redis';
import { redisTargetOf } from '../core/platform/redis';
import type { ServiceContext } from '../core/service/context';
import type { Queues } from '../core/jobs/catalog';
import type { PaymentPageCache } from '../core/orders/payment-page-cache';
import { ApiKeyCache } from './key-cache';

/** What the app factory needs: the shared service context plus the API's Redis connection and queues. */
export interface ApiDeps extends ServiceContext {
  /** Producer connection: fails fast when Redis is down. */
  redis: RedisClient;
  /**
   * The public pages' per-IP limiter connection: fails fast too, and auto-pipelined (the limits
   * checked in one event-loop turn go to Redis in one write). Its own connection, so the queues'
   * traffic on `redis` is never batched.
   */
  pageLimitRedis: RedisClient;
  /** The queues themselves, for the operators' dashboard (bull-board) only; enqueue through `jobs`. */
  queues: Queues;
  /** This instance's memory of recently used API keys (revocations announced through Redis). */
  keyCache: ApiKeyCache;
  /** Open orders' payment page facts, forgotten on Postgres's word (off until its listener is up). */
  paymentPages: PaymentPageCache;
  /**
   * False while the process still does its start-up work (`npm start`'s first organization, key
   * and pools): /health then answers 503 "starting". Absent: ready.
   */
  readiness?: { ready: boolean };
}

/** The key cache of an API instance of this deployment (its Redis subscription opens on first use). */
export function createKeyCache(ctx: ServiceContext, opts: { ttlMs?: number } = {}): ApiKeyCache {
  return new ApiKeyCache({ redisUrl: redisTargetOf(ctx.config), channel: `${ctx.config.redisPrefix}:api-keys:revoked`, logger: ctx.logger, ttlMs: opts.ttlMs });
}
