import type { Response } from 'express';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../../core/platform/errors';
import type { Caller } from '../../core/organizations/organizations';
import type { ApiDeps } from '../deps';

/** Counts one request of the caller; throws RATE_LIMIT_EXCEEDED past a limit. */
export type RateLimiter = (caller: Caller, res: Response) => Promise<void>;

/**
 * Per-key limits kept in Redis, so they hold across API instances (style B: 100/min, 1,000/h,
 * 10,000/day by default). If Redis is unreachable the request is let through and logged:
 * the payment API stays available. Null when the deployment has rate limiting off.
 */
export function createRateLimiter(deps: ApiDeps): RateLimiter | null {
  const { rateLimit: limits, redisPrefix } = deps.config;
  if (!limits.enabled) return null;
  const windows = [
    { points: limits.perMinute, duration: 60, name: 'm' },
    { points: limits.perHour, duration: 3600, name: 'h' },
    { points: limits.perDay, duration: 86400, name: 'd' },
  ].map(
    (w) =>
      ({
        ...w,
        limiter: new RateLimiterRedis({
          storeClient: deps.redis,
          keyPrefix: `${redisPrefix}:rl:${w.name}`,
          points: w.points,
          duration: w.duration,
          useRedisPackage: false,
        }),
      }) as const,
  );

  return async (caller, res) => {
    try {
      const results = await Promise.all(
        windows.map((w) =>
          w.limiter.consume(caller.keyId, 1).then(
            (r) => ({ w, r, ok: true }),
            (r) => {
              if (r instanceof RateLimiterRes) return { w, r, ok: false };
              throw r;
            },
          ),
        ),
      );
      // Headers describe the tightest window.
      const tightest = results.reduce((a, b) => (remaining(b) < remaining(a) ? b : a));
      res.setHeader('X-RateLimit-Limit', String(tightest.w.points));
      res.setHeader('X-RateLimit-Remaining', String(remaining(tightest)));
      res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + tightest.r.msBeforeNext) / 1000)));
      const rejected = results.filter((x) => !x.ok);
      if (rejected.length > 0) {
        const retryAfter = Math.max(1, Math.ceil(Math.max(...rejected.map((x) => x.r.msBeforeNext)) / 1000));
        res.setHeader('Retry-After', String(retryAfter));
        throw new AppError('RATE_LIMIT_EXCEEDED', `Rate limit exceeded; retry after ${retryAfter} seconds`, undefined, { retryAfter });
      }
    } catch (err) {
      if (err instanceof AppError) throw err;
      deps.logger.warn({ err: { message: (err as Error).message } }, 'rate limiter unavailable; request allowed');
    }
  };
}

function remaining(x: { w: { points: number }; r: RateLimiterRes }): number {
  return Math.max(0, x.w.points - x.r.consumedPoints);
}
