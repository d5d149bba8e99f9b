import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

/** One Redis or a Redis Cluster (REDIS_CLUSTER_NODES): every command the service sends works on both. */
export type RedisClient = Redis | Cluster;

/** Where Redis is: REDIS_URL, or the seed nodes of a cluster (redis:// URLs) when REDIS_CLUSTER_NODES is set. */
export interface RedisTarget {
  url: string;
  clusterNodes?: string[] | null;
}

export function redisTargetOf(config: { redisUrl: string; redisClusterNodes?: string[] | null }): RedisTarget {
  return { url: config.redisUrl, clusterNodes: config.redisClusterNodes ?? null };
}

/**
 * The prefix of BullMQ's keys. On a cluster it is a hash tag (`{sg}`): a queue's keys must share a
 * slot (BullMQ's scripts touch several at once), so every queue lives on the node owning that slot.
 * One Redis keeps the plain prefix (existing queues stay where they are).
 */
export function queuePrefixOf(config: { redisPrefix: string; redisClusterNodes?: string[] | null }): string {
  return config.redisClusterNodes?.length ? `{${config.redisPrefix}}` : config.redisPrefix;
}

/** Opens a connection to the target: a Cluster over the seed nodes, or one Redis. */
export function connectRedis(target: string | RedisTarget, options: RedisOptions): RedisClient {
  const { url, clusterNodes } = typeof target === 'string' ? { url: target, clusterNodes: null } : target;
  if (!clusterNodes?.length) return new Redis(url, options);
  const seeds = clusterNodes.map((u) => new URL(u));
  const first = seeds[0];
  const { retryStrategy, maxRetriesPerRequest, enableOfflineQueue, enableAutoPipelining, ...nodeOptions } = options;
  const clusterOptions: ClusterOptions = {
    clusterRetryStrategy: retryStrategy ?? undefined,
    enableOfflineQueue,
    enableAutoPipelining,
    enableReadyCheck: true,
    redisOptions: {
      ...nodeOptions,
      maxRetriesPerRequest,
      username: first.username ? decodeURIComponent(first.username) : undefined,
      password: first.password ? decodeURIComponent(first.password) : undefined,
      tls: first.protocol === 'rediss:' ? {} : undefined,
    },
  };
  return new Cluster(
    seeds.map((u) => ({ host: u.hostname, port: Number(u.port || 6379) })),
    clusterOptions,
  );
}

/**
 * Two kinds of Redis connection (BullMQ's advice): producers (the API) fail fast so a request
 * gets a 503 instead of hanging; workers retry forever.
 *
 * `autoPipelining`: ioredis sends the commands issued in one event-loop turn as one write (and
 * Redis answers them in one read) instead of a write and a wake-up of Redis per command. For a
 * connection of many small independent commands only (the public pages' per-IP limits); never
 * for BullMQ's connections (its scripts and blocking commands are not meant to be batched).
 */
export function createProducerRedis(url: string, options?: { autoPipelining?: boolean }): Redis;
export function createProducerRedis(target: string | RedisTarget, options?: { autoPipelining?: boolean }): RedisClient;
export function createProducerRedis(target: string | RedisTarget, options: { autoPipelining?: boolean } = {}): RedisClient {
  return connectRedis(target, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 200, 2000),
    lazyConnect: false,
    enableAutoPipelining: options.autoPipelining ?? false,
  } satisfies RedisOptions);
}

export function createWorkerRedis(url: string): Redis;
export function createWorkerRedis(target: string | RedisTarget): RedisClient;
export function createWorkerRedis(target: string | RedisTarget): RedisClient {
  return connectRedis(target, {
    maxRetriesPerRequest: null,
    enableReadyCheck: false,
    retryStrategy: (times) => Math.min(times * 200, 5000),
  } satisfies RedisOptions);
}

/** Resolves once the connection is ready, or rejects with the connection error. */
export async function waitForRedis(redis: RedisClient, timeoutMs = 5000): Promise<void> {
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

/** Deletes every key under a prefix (tests clean up their own prefix); on a cluster, on every master. */
export async function deleteKeysWithPrefix(redis: RedisClient, prefix: string): Promise<number> {
  if (redis instanceof Cluster) {
    let deleted = 0;
    for (const node of redis.nodes('master')) deleted += await scanAndDelete(node, prefix, true);
    return deleted;
  }
  return scanAndDelete(redis, prefix, false);
}

async function scanAndDelete(redis: Redis, prefix: string, keyByKey: boolean): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    // A cluster node refuses a DEL of keys in different slots: one key at a time there.
    if (keyByKey) for (const key of keys) deleted += await redis.del(key);
    else if (keys.length > 0) deleted += await redis.del(...keys);
  } while (cursor !== '0');
  return deleted;
}
