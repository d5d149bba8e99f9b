import type { RedisClient } from './redis';
import { ConfigError, type Config } from './config';
import type { Logger } from './logger';
import type { PlatformMemory } from './process-memory';

/**
 * Queues live in Redis: a Redis that evicts keys under memory pressure silently loses jobs (and
 * BullMQ's locks). Only `noeviction` is fit. The policy is read from INFO memory, because managed
 * Redis services often forbid CONFIG GET.
 */
export type EvictionFit = 'ok' | 'evicts' | 'unknown';

export interface EvictionCheck {
  policy: string | null;
  fit: EvictionFit;
}

export async function readEvictionPolicy(redis: RedisClient): Promise<EvictionCheck> {
  try {
    const info = await redis.info('memory');
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? null;
    if (!policy) return { policy: null, fit: 'unknown' };
    return { policy, fit: policy === 'noeviction' ? 'ok' : 'evicts' };
  } catch {
    return { policy: null, fit: 'unknown' };
  }
}

/** What /health shows for it: anything but `ok` is a degraded check (HTTP stays 200). */
export function evictionHealth(check: EvictionCheck): 'ok' | 'degraded' | 'unknown' {
  return check.fit === 'ok' ? 'ok' : check.fit === 'evicts' ? 'degraded' : 'unknown';
}

/**
 * At start: `noeviction` passes; another policy is an error line, and outside NETWORK=local the
 * process refuses to start unless ALLOW_REDIS_EVICTION=true; an unreadable policy is a warning.
 * Logged once per process (npm start checks from its API and its workers, which share one context:
 * what was logged is kept on it, `memory.reportedEvictionPolicy`).
 */
export async function checkRedisFitForQueues(
  redis: RedisClient,
  ctx: { config: Pick<Config, 'network' | 'allowRedisEviction'>; logger: Logger; memory: Pick<PlatformMemory, 'reportedEvictionPolicy'> },
): Promise<EvictionCheck> {
  const { config, logger, memory } = ctx;
  const check = await readEvictionPolicy(redis);
  const refuse = check.fit === 'evicts' && config.network !== 'local' && !config.allowRedisEviction;
  if (refuse) {
    throw new ConfigError([
      `Redis maxmemory-policy is ${check.policy}: under memory pressure Redis would evict queued jobs. Set it to noeviction (redis-server --maxmemory-policy noeviction, or your provider's setting), or set ALLOW_REDIS_EVICTION=true to start anyway`,
    ]);
  }
  if (memory.reportedEvictionPolicy === check.policy && check.fit !== 'unknown') return check;
  memory.reportedEvictionPolicy = check.policy ?? undefined;
  if (check.fit === 'evicts') {
    logger.error({ maxmemoryPolicy: check.policy }, 'Redis may evict keys (maxmemory-policy is not noeviction): queued jobs can be lost; set maxmemory-policy noeviction');
  } else if (check.fit === 'unknown') {
    logger.warn('could not read Redis maxmemory_policy from INFO memory: make sure it is noeviction, or queued jobs can be lost');
  }
  return check;
}
