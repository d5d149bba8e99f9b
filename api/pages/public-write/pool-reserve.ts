import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../../core/platform/redis';
import type { DbOrTx } from '../../../db/client';
import type { Protocol } from '../../../core/chains/registry';
import type { Logger } from '../../../core/platform/logger';
import { countAvailableUpTo, countPoolAddresses } from '../../../core/pool/queries';
import { PublicWriteRefusal } from './refusal';

export interface PoolReserveOptions {
  redis: RedisClient;
  db: DbOrTx;
  logger: Logger;
  keyPrefix: string;
  /** The reserve: the larger of this share of the protocol's pool (percent) and `reserveMin` addresses. */
  reservePercent: number;
  reserveMin: number;
  /** How long an admitted take counts as in flight at most (a crashed instance's entries lapse then); default 60 s. */
  inFlightTtlMs?: number;
  /** How long a pool's size (for the percentage) is remembered; default 60 s. Free addresses are counted every time. */
  totalTtlMs?: number;
  /**
   * How long a take may wait for running takes to finish when only they stand between it and the
   * reserve (they may yet give their address back, e.g. sold out), before answering busy; default 5 s.
   */
  waitMs?: number;
}

/**
 * The admission, atomic in Redis. KEYS: the pool's in-flight takes (a sorted set, score = when the
 * entry lapses) and its count of finished takes. ARGV: now, the entry's lapse time, the free
 * addresses counted, the finished count read before counting, the reserve, the token, the set's TTL.
 * Returns 1 admitted; 0 the reserve would be touched; 2 it would only if every running take took
 * its address (wait for them: they may give theirs back); -1 the finished count went back (Redis
 * lost its data meanwhile: the count cannot be trusted).
 */
const ADMIT = `
redis.call('zremrangebyscore', KEYS[1], '-inf', ARGV[1])
local inFlight = redis.call('zcard', KEYS[1])
local finishedSince = tonumber(redis.call('get', KEYS[2]) or '0') - tonumber(ARGV[4])
if finishedSince < 0 then return -1 end
local free = tonumber(ARGV[3]) - finishedSince
if free <= tonumber(ARGV[5]) then return 0 end
if free - inFlight <= tonumber(ARGV[5]) then return 2 end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[6])
redis.call('pexpire', KEYS[1], ARGV[7])
return 1`;

/** Free addresses counted beyond what the decision needs, for the takes that finish meanwhile. */
const COUNT_HEADROOM = 256;
const FINISHED_TTL_MS = 24 * 3600_000;

/**
 * Keeps anonymous writes from draining a merchant's address pool: a take (e.g. a checkout's order
 * creation) runs only while more than the reserve of the organization's pool for the protocol is
 * free, across API instances. API orders never go through it: the reserve is what is left for the
 * merchant's own orders and bindings.
 *
 * No take waits for another (issue 37): the guard used to run the takes of one pool one at a time
 * under a lock held for the whole order creation, and a burst on one link (a flash sale) queued
 * behind it until about half of 80 concurrent checkouts ran out of lock wait ("busy"). Now a take
 * counts the free addresses in the database, then is admitted atomically in Redis only if
 *   counted − takes finished since the count − takes admitted and still running > reserve.
 * A running take may yet take one address; a finished one has (or has not) and left the running
 * set only after its creation committed or failed, so it is either in the count, or subtracted as
 * finished since, or subtracted as running: never missed (a take counted twice only refuses
 * earlier, never later). A take that only the running ones keep from the reserve waits for them
 * (up to waitMs; they may give their address back) instead of being refused for what may not happen.
 */
export class PoolReserveGuard {
  /** Each pool's size, read at most every totalTtlMs: counting a large pool is the slow part. */
  private readonly totals = new Map<string, { total: number; at: number }>();

  constructor(private readonly options: PoolReserveOptions) {}

  /** The reserve of a pool of `total` addresses. */
  reserveOf(total: number): number {
    return Math.max(this.options.reserveMin, Math.ceil((total * this.options.reservePercent) / 100));
  }

  async take<T>(scope: { organizationId: string; protocol: Protocol }, create: () => Promise<T>): Promise<T> {
    // One hash tag: on a Redis Cluster both keys live in the same slot, as a script needs.
    const pool = `${this.options.keyPrefix}:{${scope.organizationId}:${scope.protocol}}`;
    const running = `${pool}:running`;
    const finished = `${pool}:finished`;
    const token = randomBytes(12).toString('base64url');
    const reserve = this.reserveOf(await this.totalOf(pool, scope));
    const ttl = this.options.inFlightTtlMs ?? 60_000;
    const deadline = Date.now() + (this.options.waitMs ?? 5000);
    let admitted = 0;
    for (let wait = 10; ; wait = Math.min(wait * 2, 100)) {
      admitted = await this.admit({ scope, running, finished, reserve, token, ttl });
      // Running takes stand between this one and the reserve: they finish (an order, or their address back) in moments.
      if (admitted !== 2) break;
      if (Date.now() + wait > deadline) throw new PublicWriteRefusal('busy', 'Busy; retry in a moment', 2);
      await new Promise((r) => setTimeout(r, wait));
    }
    if (admitted === -1) throw new PublicWriteRefusal('busy', 'Busy; retry in a moment', 2);
    if (admitted !== 1) throw new PublicWriteRefusal('poolReserve', `Only the reserve of ${reserve} ${scope.protocol} addresses is free`, 60);
    try {
      return await create();
    } finally {
      await this.options.redis
        .multi()
        .zrem(running, token)
        .incr(finished)
        .pexpire(finished, FINISHED_TTL_MS)
        .exec()
        .catch((err: Error) => {
          // Until it lapses, the take still counts as running: later takes are refused a little early, never admitted past the reserve.
          this.options.logger.warn({ err: { message: err.message } }, 'pool reserve: a finished take not recorded; its entry lapses by itself');
        });
    }
  }

  /** One admission attempt: the free addresses counted in the database, then the decision in Redis (ADMIT's answer). */
  private async admit(a: { scope: { organizationId: string; protocol: Protocol }; running: string; finished: string; reserve: number; token: string; ttl: number }): Promise<number> {
    const [finishedBefore, runningBefore] = await this.redisStep(async () => {
      const replies = await this.options.redis.multi().get(a.finished).zcard(a.running).exec();
      return [Number(replies?.[0]?.[1] ?? 0), Number(replies?.[1]?.[1] ?? 0)];
    });
    // The count is capped (a large pool is not counted whole); a refusal on a count that reached its
    // cap is no answer, so that one is counted again without the cap.
    for (const cap of [a.reserve + runningBefore + 1 + COUNT_HEADROOM, Number.MAX_SAFE_INTEGER]) {
      const counted = await countAvailableUpTo(this.options.db, a.scope.organizationId, a.scope.protocol, cap);
      const now = Date.now();
      const answer = await this.redisStep(
        async () => Number(await this.options.redis.eval(ADMIT, 2, a.running, a.finished, now, now + a.ttl, counted, finishedBefore, a.reserve, a.token, a.ttl)),
      );
      if (answer === 1 || answer === -1 || counted < cap) return answer;
    }
    return 0;
  }

  private async totalOf(key: string, scope: { organizationId: string; protocol: Protocol }): Promise<number> {
    const known = this.totals.get(key);
    if (known && Date.now() - known.at < (this.options.totalTtlMs ?? 60_000)) return known.total;
    const total = await countPoolAddresses(this.options.db, scope.organizationId, scope.protocol);
    if (this.totals.size >= 10_000) this.totals.clear();
    this.totals.set(key, { total, at: Date.now() });
    return total;
  }

  /** A Redis step of the admission: unreachable Redis refuses the write (busy), never lets it pass unchecked. */
  private async redisStep<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      this.options.logger.warn({ err: { message: (err as Error).message } }, 'pool reserve unavailable; write refused');
      throw new PublicWriteRefusal('busy', 'Temporarily unavailable', 5);
    }
  }
}

/**
 * The guard of the public pages' writes that take an address (a checkout's order, a USD order's route
 * chosen by its payer): one reserve per pool, on one set of keys, whichever page takes.
 */
export function publicPoolReserve(deps: {
  redis: RedisClient;
  db: DbOrTx;
  logger: Logger;
  config: { redisPrefix: string; checkout: { poolReservePercent: number; poolReserveMin: number } };
}): PoolReserveGuard {
  return new PoolReserveGuard({
    redis: deps.redis,
    db: deps.db,
    logger: deps.logger,
    keyPrefix: `${deps.config.redisPrefix}:pw:pool`,
    reservePercent: deps.config.checkout.poolReservePercent,
    reserveMin: deps.config.checkout.poolReserveMin,
  });
}
