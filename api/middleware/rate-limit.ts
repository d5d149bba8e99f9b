import type { Response } from 'express';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../../core/platform/errors';
import type { Caller } from '../../core/organizations/organizations';
import type { ApiDeps } from '../deps';

/** Counts one request of the caller to a route; throws RATE_LIMIT_EXCEEDED past a limit. */
export type RateLimiter = (caller: Caller, res: Response, route: { method: string; path: string }) => Promise<void>;

/**
 * Description A's per-organization limits (spec, "Rate limits"): 100 requests a minute for orders,
 * 50 for deposits, 300 for queries. Writes to /orders count as orders, writes to /deposits as
 * deposits, everything else (reads, and the other resources' writes) as queries.
 */
export const STYLE_A_LIMITS = { orders: 100, deposits: 50, queries: 300 } as const;
export type StyleACategory = keyof typeof STYLE_A_LIMITS;

export function styleACategory(route: { method: string; path: string }): StyleACategory {
  if (route.method === 'get') return 'queries';
  if (route.path.startsWith('/orders')) return 'orders';
  if (route.path.startsWith('/deposits')) return 'deposits';
  return 'queries';
}

/**
 * Per-key limits kept in Redis, so they hold across API instances (style B: 100/min, 1,000/h,
 * 10,000/day by default); in style A, when its limits are on (RATE_LIMIT_ENABLED=true), description
 * A's per-organization limits as well (STYLE_A_LIMITS). If Redis is unreachable the request is let through and logged:
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

  const perKey: RateLimiter = async (caller, res) => {
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
  if (deps.config.apiStyle !== 'a') return perKey;
  // Style A: the per-key windows and description A's per-organization limits, both.
  const perOrganization = styleALimiter(deps);
  return async (caller, res, route) => {
    await perKey(caller, res, route);
    await perOrganization(caller, res, route);
  };
}

/** Style A: one window of a minute per organization and category (STYLE_A_LIMITS), in Redis. */
function styleALimiter(deps: ApiDeps): RateLimiter {
  const limiters = Object.fromEntries(
    (Object.keys(STYLE_A_LIMITS) as StyleACategory[]).map((category) => [
      category,
      new RateLimiterRedis({ storeClient: deps.redis, keyPrefix: `${deps.config.redisPrefix}:rl:a:${category}`, points: STYLE_A_LIMITS[category], duration: 60, useRedisPackage: false }),
    ]),
  ) as Record<StyleACategory, RateLimiterRedis>;
  return async (caller, res, route) => {
    const category = styleACategory(route);
    const points = STYLE_A_LIMITS[category];
    let result: RateLimiterRes;
    let ok = true;
    try {
      result = await limiters[category].consume(caller.organizationId, 1);
    } catch (r) {
      if (!(r instanceof RateLimiterRes)) {
        deps.logger.warn({ err: { message: (r as Error).message } }, 'rate limiter unavailable; request allowed');
        return;
      }
      result = r;
      ok = false;
    }
    // The headers describe the tightest limit: this one only when it is tighter than the key's.
    const left = Math.max(0, points - result.consumedPoints);
    const shown = Number(res.getHeader('X-RateLimit-Remaining') ?? Infinity);
    if (left < shown || !ok) {
      res.setHeader('X-RateLimit-Limit', String(points));
      res.setHeader('X-RateLimit-Remaining', String(left));
      res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + result.msBeforeNext) / 1000)));
    }
    if (!ok) {
      const retryAfter = Math.max(1, Math.ceil(result.msBeforeNext / 1000));
      res.setHeader('Retry-After', String(retryAfter));
      throw new AppError('RATE_LIMIT_EXCEEDED', `Rate limit exceeded: ${points} ${category} requests per minute per organization; retry after ${retryAfter} seconds`, undefined, { retryAfter });
    }
  };
}

function remaining(x: { w: { points: number }; r: RateLimiterRes }): number {
  return Math.max(0, x.w.points - x.r.consumedPoints);
}
