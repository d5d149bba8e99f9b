import type { Request, Response } from 'express';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '../../core/logger';

/**
 * Per-client-IP limit of the public pages, kept in Redis so it holds across API instances. The
 * client IP is Express's req.ip, which follows X-Forwarded-For only as far as TRUST_PROXY allows:
 * a client not behind a trusted proxy cannot choose its IP. Redis unreachable: let through, logged.
 * A step, not a middleware: it resolves true when the request may go on, false when it has
 * answered (429) itself.
 */
export function ipRateLimit(options: {
  redis: Redis;
  keyPrefix: string;
  perMinute: number;
  logger: Logger;
  onLimited: (req: Request, res: Response, retryAfterSeconds: number) => void;
}): (req: Request, res: Response) => Promise<boolean> {
  const limiter = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: options.keyPrefix,
    points: options.perMinute,
    duration: 60,
    useRedisPackage: false,
  });
  return async (req, res) => {
    try {
      await limiter.consume(req.ip ?? 'unknown', 1);
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        res.setHeader('Retry-After', String(retryAfter));
        options.onLimited(req, res, retryAfter);
        return false;
      }
      options.logger.warn({ err: { message: (err as Error).message } }, 'page rate limiter unavailable; request allowed');
    }
    return true;
  };
}
