import { createHash } from 'node:crypto';
import { RateLimiterRedis, type RateLimiterRes } from 'rate-limiter-flexible';
import type { RedisClient } from '../../../core/platform/redis';
import { clientIpKey } from '../../client-ip';

/**
 * Sign-in attempt limits that slow guessing and never lock an account's owner out (issues 29, 37),
 * on rate-limiter-flexible in Redis (shared by every API instance). Failures are counted per client
 * IP, per account from that IP, and per account from anywhere; past each count's free failures a
 * delay doubles with every further failure, up to a cap; the counts forget an hour after their first
 * failure, and a successful sign-in clears the account's count from that IP.
 *
 * Who a delay holds back, and why: every delay is laid on the client that failed, never on a client
 * that has not. The account-wide count cannot tell the owner from a guesser (only the password can),
 * so when it is past its free failures, each failing client is held for the account's delay (its
 * share of it), and a client with no failure on the account still gets its password checked. An
 * account-wide delay checked before the password let a guesser with a fresh IP each minute keep the
 * owner out for good (issue 37: 8 of 8 sign-ins refused); now the owner with the right password is
 * never refused by what others did, and a distributed guesser pays one IP per guess per delay (the
 * per-IP count, across all accounts, bounds each IP further). We chose this over trusted-device
 * cookies (OWASP) because it also lets in an owner on a new browser. The password is checked the
 * same way on every attempt that is not held (a decoy hash for an unknown e-mail), so a refusal
 * tells nothing of the account, and the page never states the moment to retry.
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

/** Redis could not be consulted: the attempt is refused (503), never let through unchecked. */
export class SignInLimitsUnavailable extends Error {
  constructor(cause: unknown) {
    super(`sign-in limits unavailable: ${(cause as Error).message}`);
    this.name = 'SignInLimitsUnavailable';
  }
}

export interface SignInLimits {
  /** Seconds this client must still wait before its attempt is checked (0: check it now). */
  wait(ip: string, email: string): Promise<number>;
  failed(ip: string, email: string): Promise<void>;
  succeeded(ip: string, email: string): Promise<void>;
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32);
const delayOf = (rule: Rule, failures: number) => (failures > rule.free ? Math.min(rule.capSeconds, 2 ** Math.min(failures - rule.free - 1, 20)) : 0);

export function signInLimits(options: { redis: RedisClient; keyPrefix: string }): SignInLimits {
  const limiter = (name: string, points: number, duration: number) =>
    new RateLimiterRedis({ storeClient: options.redis, keyPrefix: `${options.keyPrefix}:${name}`, points, duration, useRedisPackage: false });
  // Per rule: the failures counted (penalty adds one, never refuses) and the delay in force (`block`).
  const failures = Object.fromEntries(RULES.map((r) => [r.name, limiter(`${r.name}:n`, r.free, FORGET_AFTER_SECONDS)])) as Record<Rule['name'], RateLimiterRedis>;
  const delays = { ip: limiter('ip:wait', 1, 1), 'account-ip': limiter('account-ip:wait', 1, 1) };
  const idsOf = (ip: string, email: string): Record<Rule['name'], string> => {
    const account = digest(email.trim().toLowerCase());
    // An IPv6 client counts as its /64: its addresses are one client's, not 2^64 fresh ones.
    const client = digest(clientIpKey(ip));
    return { ip: client, 'account-ip': `${account}:${client}`, account };
  };
  const remainingMs = (res: RateLimiterRes | null) => (res && res.consumedPoints > 1 ? res.msBeforeNext : 0);
  // Every Redis step: an error means the limits cannot be consulted, and the caller refuses.
  const step = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw new SignInLimitsUnavailable(err);
    }
  };

  return {
    async wait(ip, email) {
      const ids = idsOf(ip, email);
      // One key a command: on a Redis Cluster these keys hash to different slots.
      const [byIp, byAccountIp] = await step(() => Promise.all([delays.ip.get(ids.ip), delays['account-ip'].get(ids['account-ip'])]));
      return Math.ceil(Math.max(remainingMs(byIp), remainingMs(byAccountIp)) / 1000);
    },
    async failed(ip, email) {
      const ids = idsOf(ip, email);
      const counts = await step(() => Promise.all(RULES.map((r) => failures[r.name].penalty(ids[r.name], 1))));
      const [ipDelay, accountIpDelay, accountDelay] = RULES.map((r, i) => delayOf(r, counts[i].consumedPoints));
      // The account-wide delay holds this failing client (for this account), no other.
      const forClient = Math.max(accountIpDelay, accountDelay);
      await step(() =>
        Promise.all([ipDelay > 0 ? delays.ip.block(ids.ip, ipDelay) : null, forClient > 0 ? delays['account-ip'].block(ids['account-ip'], forClient) : null]),
      );
    },
    async succeeded(ip, email) {
      const ids = idsOf(ip, email);
      // The account-wide count stays: the owner's sign-in does not forgive the other clients' failures.
      await step(() => Promise.all([failures['account-ip'].delete(ids['account-ip']), delays['account-ip'].delete(ids['account-ip'])]));
    },
  };
}
