import type { Request, Response } from 'express';
import type { ApiDeps } from './deps';
import { SERVICE_VERSION } from '../core/version';
import { pingDatabase } from '../db/client';
import { evictionHealth, readEvictionPolicy } from '../core/redis-eviction';

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A check's answer: `ok`, or what is wrong (`down`, `degraded`, `unknown`). */
type CheckValue = string;

/**
 * The checks of /health. `critical` ones make it 503 when not ok (only Postgres or Redis being
 * unreachable takes an instance out of a load balancer); the others show as degraded in the body
 * with 200. Add a check here to extend the body.
 */
function healthChecks(deps: ApiDeps): Record<string, { critical: boolean; run: () => Promise<CheckValue> }> {
  return {
    database: { critical: true, run: () => withTimeout(pingDatabase(deps.db), 2000).then(() => 'ok', () => 'down') },
    redis: { critical: true, run: () => withTimeout(deps.redis.ping(), 2000).then(() => 'ok', () => 'down') },
    // Redis that may evict keys can lose queued jobs (core/redis-eviction.ts).
    redisEviction: { critical: false, run: () => withTimeout(readEvictionPolicy(deps.redis), 2000).then(evictionHealth, () => 'unknown') },
  };
}

/** GET /health at the root: never enveloped, needs no key; 503 "degraded" naming what failed. */
export function healthHandler(deps: ApiDeps) {
  const checks = healthChecks(deps);
  return async (_req: Request, res: Response) => {
    const entries = Object.entries(checks);
    const values = await Promise.all(entries.map(([, c]) => c.run()));
    const results = Object.fromEntries(entries.map(([name], i) => [name, values[i]]));
    const reachable = entries.every(([, c], i) => !c.critical || values[i] === 'ok');
    const allOk = values.every((v) => v === 'ok');
    res.status(reachable ? 200 : 503).json({
      status: allOk ? 'ok' : 'degraded',
      timestamp: new Date().toISOString(),
      version: SERVICE_VERSION,
      checks: results,
    });
  };
}
