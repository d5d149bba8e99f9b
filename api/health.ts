import type { Request, Response } from 'express';
import type { ApiDeps } from './deps';
import { SERVICE_VERSION } from '../core/platform/version';
import { pingDatabase } from '../db/client';
import { degradedChains, healthStartedAt } from '../core/detection/chain-health';
import { chainLooks, type ChainLooks } from '../core/detection/head-look-gaps';
import { setRequestLogLevel } from './request-log';
import { evictionHealth, readEvictionPolicy } from '../core/platform/redis-eviction';

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
 * unreachable; the other checks (a degraded chain, a Redis that may evict queued jobs) show as
 * degraded in `checks` with 200, so one bad provider or setting never takes every API instance
 * out of a load balancer. `checks` is {database, redis, redisEviction, chains}; add checks there.
 * The chains are judged from the database at the moment of asking (core/detection/chain-health.ts):
 * one not scanned or whose providers never answered is degraded whatever the cause, even with no
 * worker alive. `chainLooks` tells, per enabled chain, how old the fleet's newest look at its head
 * is and whether looks have stopped while its addresses are handed out (issue 39,
 * core/detection/head-look-gaps.ts); a chain whose looks stopped makes checks.chains "degraded".
 * The body is the same in both wire formats (never enveloped): api/format.ts has nothing to do
 * with it. While the process is still starting (ApiDeps.readiness) it answers 503
 * {status: "starting"}. Its 503s are expected answers: logged as info (starting) or warn, not error.
 */
export function healthHandler(deps: ApiDeps) {
  // A chain may have no head yet for a short while after this start (chain-health.ts).
  const startedAt = healthStartedAt(deps);
  return async (_req: Request, res: Response) => {
    // Not ready before everything the start promises exists: a script that waits for 200 and
    // then creates an order must find the organization, its key and its pool in place.
    if (deps.readiness && !deps.readiness.ready) {
      setRequestLogLevel(res, 'info');
      res.status(503).setHeader('Retry-After', '1');
      res.json({ status: 'starting', timestamp: new Date().toISOString(), version: SERVICE_VERSION });
      return;
    }
    const [database, redis, redisEviction] = await Promise.all([
      withTimeout(pingDatabase(deps.db), 2000).then(() => 'ok', () => 'down'),
      withTimeout(deps.redis.ping(), 2000).then(() => 'ok', () => 'down'),
      // Redis that may evict keys can lose queued jobs (core/platform/redis-eviction.ts).
      withTimeout(readEvictionPolicy(deps.redis), 2000).then(evictionHealth, () => 'unknown'),
    ]);
    const now = deps.clock.now();
    const [stalled, looks] =
      database === 'ok'
        ? await Promise.all([
            withTimeout(degradedChains(deps, now, startedAt), 2000).catch(() => null),
            withTimeout(chainLooks(deps, now), 2000).catch(() => null),
          ])
        : [null, null];
    const chains = stalled === null || looks === null ? 'unknown' : stalled.length > 0 || looks.some((c) => c.looks === 'stopped') ? 'degraded' : 'ok';
    const checks = { database, redis, redisEviction, chains };
    const reachable = database === 'ok' && redis === 'ok';
    if (!reachable) setRequestLogLevel(res, 'warn');
    res.status(reachable ? 200 : 503).json({
      status: Object.values(checks).every((v) => v === 'ok') ? 'ok' : 'degraded',
      timestamp: new Date().toISOString(),
      version: SERVICE_VERSION,
      checks,
      ...(stalled && stalled.length > 0
        ? {
            stalledChains: stalled.map((c) => ({ chainId: c.chainId, reason: c.reason, since: c.since.toISOString(), head: c.head, checkpoint: c.checkpoint })),
          }
        : {}),
      ...(looks ? { chainLooks: looks.map(presentLooks) } : {}),
    });
  };
}

/** One chain's looks in /health: the age in seconds to a tenth, null where no look was ever stored. */
function presentLooks(c: ChainLooks) {
  return {
    chainId: c.chainId,
    looks: c.looks,
    headLookAgeSeconds: c.ageMs === null ? null : Math.round(c.ageMs / 100) / 10,
    lastLookAt: c.lastLookAt?.toISOString() ?? null,
    head: c.head,
  };
}
