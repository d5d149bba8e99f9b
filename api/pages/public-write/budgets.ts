import type { RedisClient } from '../../../core/platform/redis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '../../../core/platform/logger';
import { PublicWriteRefusal } from './refusal';

/** One budget: `points` writes per `durationSeconds` for each key (a client IP, a resource id). */
export interface BudgetRule {
  points: number;
  durationSeconds: number;
}

/**
 * Budgets of anonymous writes, in Redis so they hold across API instances: e.g. per client IP and
 * per resource (a payment link). `spend` takes one point of each named budget in order and refuses
 * (429 with retryAfter) at the first spent one, giving back the points it took before it. Unlike
 * the pages' view limit, a write fails closed: Redis unreachable is a 503 and nothing is written,
 * since the writes spend what a merchant owns.
 */
export class WriteBudgets<Name extends string> {
  private readonly limiters: Record<Name, RateLimiterRedis>;

  constructor(
    private readonly options: { redis: RedisClient; keyPrefix: string; logger: Logger },
    rules: Record<Name, BudgetRule>,
  ) {
    this.limiters = {} as Record<Name, RateLimiterRedis>;
    for (const [name, rule] of Object.entries(rules) as [Name, BudgetRule][]) {
      this.limiters[name] = new RateLimiterRedis({
        storeClient: options.redis,
        keyPrefix: `${options.keyPrefix}:${name}`,
        points: rule.points,
        duration: rule.durationSeconds,
        useRedisPackage: false,
      });
    }
  }

  async spend(entries: { budget: Name; key: string }[]): Promise<void> {
    for (const [i, { budget, key }] of entries.entries()) {
      try {
        await this.limiters[budget].consume(key, 1);
      } catch (err) {
        // Nothing is written: the budgets already taken go back (a visitor refused because the link
        // is over its budget must not lose its own budget for it).
        await this.refund(entries.slice(0, i));
        if (err instanceof RateLimiterRes) {
          throw new PublicWriteRefusal('tooMany', `Too many requests (${budget})`, Math.max(1, Math.ceil(err.msBeforeNext / 1000)));
        }
        this.options.logger.warn({ err: { message: (err as Error).message }, budget }, 'public write budget unavailable; write refused');
        throw new PublicWriteRefusal('busy', 'Temporarily unavailable', 5);
      }
    }
  }

  /**
   * Gives back what `spend` took, for a write that then made nothing (refused by the service itself,
   * e.g. busy): the budgets pay for what is made, not for the service's own refusals. A refund that
   * cannot reach Redis is logged and dropped: it only leaves the visitor a point short until the window ends.
   */
  async refund(entries: { budget: Name; key: string }[]): Promise<void> {
    for (const { budget, key } of entries) {
      try {
        await this.limiters[budget].reward(key, 1);
      } catch (err) {
        this.options.logger.warn({ err: { message: (err as Error).message }, budget }, 'public write budget not refunded');
      }
    }
  }
}
