import { Redis, type RedisOptions } from 'ioredis';

/**
 * Two kinds of Redis connection (BullMQ's advice): producers (the API) fail fast so a request
 * gets a 503 instead of hanging; workers retry forever.
 *
 * `autoPipelining`: ioredis sends the commands issued in one event-loop turn as one write (and
 * Redis answers them in one read) instead of a write and a wake-up of Redis per command. For a
 * connection of many small independent commands only (the public pages' per-IP limits); never
 * for BullMQ's connections (its scripts and blocking commands are not meant to be batched).
 */
export function createProducerRedis(url: string, options: { autoPipelining?: boolean } = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 200, 2000),
    lazyConnect: false,
    enableAutoPipelining: options.autoPipelining ?? false,
  } satisfies RedisOptions);
}

export function createWorkerRedis(url: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: false,
    retryStrategy: (times) => Math.min(times * 200, 5000),
  } satisfies RedisOptions);
}

/** Resolves once the connection is ready, or rejects with the connection error. */
export async function waitForRedis(redis: Redis, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => done(Object.assign(new Error('Redis connection timed out'), { code: 'ETIMEDOUT', port: 6379 })), timeoutMs);
    const onReady = () => done();
    const onError = (err: Error) => done(Object.assign(err, { message: `Redis: ${err.message}` }));
    function done(err?: Error) {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      if (err) reject(err);
      else resolve();
    }
    redis.once('ready', onReady);
    redis.once('error', onError);
  });
}

/** Deletes every key under a prefix (tests clean up their own prefix). */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.del(...keys);
  } while (cursor !== '0');
  return deleted;
}
