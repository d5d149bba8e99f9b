import { createHash } from 'node:crypto';
import type { RedisClient } from '../../../core/platform/redis';
import type { Logger } from '../../../core/platform/logger';

/**
 * Sign-in attempt limits that delay and never lock for good (issue 29): failures are counted per
 * client IP, per account from that IP, and per account from anywhere. Past each count's free
 * failures, the next attempt waits a delay that doubles with every further failure, up to a cap;
 * the counts forget after an hour without failures, and a successful sign-in clears the account's.
 * An attacker guessing one account from many IPs can only slow its owner down by the account-wide
 * cap (a minute), never keep them out; from one IP he is slowed by the longer per-IP caps.
 */
interface Rule {
  name: 'ip' | 'account-ip' | 'account';
  free: number;
  capSeconds: number;
}

const RULES: readonly Rule[] = [
  { name: 'ip', free: 20, capSeconds: 15 * 60 },
  { name: 'account-ip', free: 5, capSeconds: 15 * 60 },
  { name: 'account', free: 10, capSeconds: 60 },
];
const FORGET_AFTER_SECONDS = 3600;

export interface SignInLimits {
  /** Seconds until this attempt may be made (0: now). */
  wait(ip: string, email: string): Promise<number>;
  failed(ip: string, email: string): Promise<void>;
  succeeded(ip: string, email: string): Promise<void>;
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32);

export function signInLimits(options: { redis: RedisClient; keyPrefix: string; logger: Logger; now?: () => number }): SignInLimits {
  const now = options.now ?? Date.now;
  const keysOf = (ip: string, email: string) => {
    const account = digest(email.trim().toLowerCase());
    const ids: Record<Rule['name'], string> = { ip: digest(ip), 'account-ip': `${account}:${digest(ip)}`, account };
    return RULES.map((rule) => ({ rule, count: `${options.keyPrefix}:${rule.name}:${ids[rule.name]}:n`, until: `${options.keyPrefix}:${rule.name}:${ids[rule.name]}:until` }));
  };
  const unavailable = (err: unknown) =>
    options.logger.warn({ err: { message: (err as Error).message } }, 'sign-in limiter unavailable; attempt allowed');

  return {
    async wait(ip, email) {
      try {
        // One key a command (here and below): on a Redis Cluster these keys hash to different
        // slots, and a multi-key MGET or DEL there is refused (the limits would silently lapse).
        const untils = await Promise.all(keysOf(ip, email).map((k) => options.redis.get(k.until)));
        const latest = Math.max(0, ...untils.map((u) => Number(u ?? 0)));
        return latest > now() ? Math.ceil((latest - now()) / 1000) : 0;
      } catch (err) {
        unavailable(err);
        return 0;
      }
    },
    async failed(ip, email) {
      try {
        for (const { rule, count, until } of keysOf(ip, email)) {
          const replies = await options.redis.multi().incr(count).expire(count, FORGET_AFTER_SECONDS).exec();
          const n = Number(replies?.[0]?.[1] ?? 0);
          if (n > rule.free) {
            const delay = Math.min(rule.capSeconds, 2 ** Math.min(n - rule.free - 1, 20));
            await options.redis.set(until, String(now() + delay * 1000), 'EX', delay);
          }
        }
      } catch (err) {
        unavailable(err);
      }
    },
    async succeeded(ip, email) {
      try {
        const keys = keysOf(ip, email).filter((k) => k.rule.name !== 'ip');
        await Promise.all(keys.flatMap((k) => [k.count, k.until]).map((key) => options.redis.del(key)));
      } catch (err) {
        unavailable(err);
      }
    },
  };
}
