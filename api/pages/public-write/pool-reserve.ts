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
  /** How long one take may hold the pool's lock (a crashed holder's lock lapses then); default 15 s. */
  lockTtlMs?: number;
  /** How long a take waits for the lock before answering busy (503); default 5 s. */
  waitMs?: number;
  /** How long a pool's size (for the percentage) is remembered; default 60 s. Free addresses are counted every time. */
  totalTtlMs?: number;
}

const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * Keeps anonymous writes from draining a merchant's address pool: a take (e.g. a checkout's order
 * creation) runs only while more than the reserve of the organization's pool for the protocol is
 * free, and takes of one pool run one at a time under a lock in Redis (across API instances), so
 * concurrent visitors cannot all pass the check at once. API orders never go through it: the
 * reserve is what is left for the merchant's own orders and bindings.
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
    const key = `${this.options.keyPrefix}:${scope.organizationId}:${scope.protocol}`;
    const token = randomBytes(12).toString('base64url');
    await this.lock(key, token);
    try {
      const reserve = this.reserveOf(await this.totalOf(key, scope));
      // Under the lock: no other take of this pool (in any instance) runs between this count and the creation.
      const available = await countAvailableUpTo(this.options.db, scope.organizationId, scope.protocol, reserve + 1);
      if (available <= reserve) {
        throw new PublicWriteRefusal('poolReserve', `Only the reserve of ${reserve} ${scope.protocol} addresses is free`, 60);
      }
      return await create();
    } finally {
      await this.options.redis.eval(RELEASE, 1, key, token).catch((err: Error) => {
        this.options.logger.warn({ err: { message: err.message } }, 'pool reserve lock not released; it lapses by itself');
      });
    }
  }

  private async totalOf(key: string, scope: { organizationId: string; protocol: Protocol }): Promise<number> {
    const known = this.totals.get(key);
    if (known && Date.now() - known.at < (this.options.totalTtlMs ?? 60_000)) return known.total;
    const total = await countPoolAddresses(this.options.db, scope.organizationId, scope.protocol);
    if (this.totals.size >= 10_000) this.totals.clear();
    this.totals.set(key, { total, at: Date.now() });
    return total;
  }

  private async lock(key: string, token: string): Promise<void> {
    const ttl = this.options.lockTtlMs ?? 15_000;
    const deadline = Date.now() + (this.options.waitMs ?? 5000);
    for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
      let got: string | null;
      try {
        got = await this.options.redis.set(key, token, 'PX', ttl, 'NX');
      } catch (err) {
        this.options.logger.warn({ err: { message: (err as Error).message } }, 'pool reserve lock unavailable; write refused');
        throw new PublicWriteRefusal('busy', 'Temporarily unavailable', 5);
      }
      if (got === 'OK') return;
      if (Date.now() + wait > deadline) throw new PublicWriteRefusal('busy', 'Busy; retry in a moment', 2);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
