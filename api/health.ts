import type { Request, Response } from 'express';
import type { ApiDeps } from './deps';
import { SERVICE_VERSION } from '../core/version';
import { pingDatabase } from '../db/client';

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** GET /health at the root: never enveloped, needs no key; 503 "degraded" naming what failed. */
export function healthHandler(deps: ApiDeps) {
  return async (_req: Request, res: Response) => {
    const [database, redis] = await Promise.all([
      withTimeout(pingDatabase(deps.db), 2000).then(() => 'ok', () => 'down'),
      withTimeout(deps.redis.ping(), 2000).then(() => 'ok', () => 'down'),
    ]);
    const healthy = database === 'ok' && redis === 'ok';
    res.status(healthy ? 200 : 503).json({
      status: healthy ? 'ok' : 'degraded',
      timestamp: new Date().toISOString(),
      version: SERVICE_VERSION,
      checks: { database, redis },
    });
  };
}
