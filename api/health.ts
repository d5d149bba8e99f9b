import type { Request, Response } from 'express';
import type { ApiDeps } from './deps';
import { SERVICE_VERSION } from '../core/version';
import { pingDatabase } from '../db/client';
import { stalledChains } from '../core/detection/stall';

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * GET /health at the root: never enveloped, needs no key. 503 only when Postgres or Redis is
 * unreachable; a stalled chain shows as a degraded `chains` check (and in `stalledChains`) with
 * 200, so one bad provider never takes every API instance out of a load balancer.
 */
export function healthHandler(deps: ApiDeps) {
  return async (_req: Request, res: Response) => {
    const [database, redis] = await Promise.all([
      withTimeout(pingDatabase(deps.db), 2000).then(() => 'ok', () => 'down'),
      withTimeout(deps.redis.ping(), 2000).then(() => 'ok', () => 'down'),
    ]);
    const stalled = database === 'ok' ? await withTimeout(stalledChains(deps.db), 2000).catch(() => null) : null;
    const chains = stalled === null ? 'unknown' : stalled.length > 0 ? 'degraded' : 'ok';
    const reachable = database === 'ok' && redis === 'ok';
    res.status(reachable ? 200 : 503).json({
      status: reachable && chains === 'ok' ? 'ok' : 'degraded',
      timestamp: new Date().toISOString(),
      version: SERVICE_VERSION,
      checks: { database, redis, chains },
      ...(stalled && stalled.length > 0
        ? {
            stalledChains: stalled.map((c) => ({ chainId: c.chainId, reason: c.reason, since: c.since.toISOString(), head: c.head, checkpoint: c.checkpoint })),
          }
        : {}),
    });
  };
}
