import type { Request, Response } from 'express';
import type { RedisClient } from '../../core/platform/redis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '../../core/platform/logger';
import { clientIpKey } from '../client-ip';

export interface IpRateLimitOptions {
  redis: RedisClient;
  keyPrefix: string;
  perMinute: number;
  logger: Logger;
}

/**
 * Per-client-IP limit of the public pages (an IPv6 client by its /64: clientIpKey), kept in Redis
 * so it holds across API instances.
 * Resolves 0 when a request of this client IP may go on, else the seconds until it may retry.
 * Redis unreachable: let through, logged.
 */
export function ipRateLimiter(options: IpRateLimitOptions): (ip: string) => Promise<number> {
  const limiter = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: options.keyPrefix,
    points: options.perMinute,
    duration: 60,
    useRedisPackage: false,
  });
  return async (ip) => {
    try {
      await limiter.consume(clientIpKey(ip), 1);
    } catch (err) {
      if (err instanceof RateLimiterRes) return Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      options.logger.warn({ err: { message: (err as Error).message } }, 'page rate limiter unavailable; request allowed');
    }
    return 0;
  };
}

/**
 * The limit as a step of an Express page. The client IP is Express's req.ip, which follows
 * X-Forwarded-For only as far as TRUST_PROXY allows: a client not behind a trusted proxy cannot
 * choose its IP. A step, not a middleware: it resolves true when the request may go on, false
 * when it has answered (429) itself.
 */
export function ipRateLimit(
  options: IpRateLimitOptions & { onLimited: (req: Request, res: Response, retryAfterSeconds: number) => void },
): (req: Request, res: Response) => Promise<boolean> {
  const consume = ipRateLimiter(options);
  return async (req, res) => {
    const retryAfter = await consume(req.ip ?? 'unknown');
    if (retryAfter === 0) return true;
    res.setHeader('Retry-After', String(retryAfter));
    options.onLimited(req, res, retryAfter);
    return false;
  };
}
