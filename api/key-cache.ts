import { connectRedis, type RedisClient, type RedisTarget } from '../core/platform/redis';
import { systemClock, type Clock } from '../core/platform/clock';
import type { Logger } from '../core/platform/logger';
import type { ApiKeyLookup, ApiKeyRecord } from '../core/organizations/organizations';

/**
 * This API instance's memory of recently used API keys, so that an authenticated request does not
 * cost a database round trip (on a busy instance that lookup was a fifth of an order creation's
 * CPU time, database side included).
 *
 * Revocation still takes effect at once:
 * - the instance that revokes a key forgets it before it answers;
 * - every instance listens on a Redis channel where revocations are announced, and forgets the
 *   key when the announcement arrives (milliseconds);
 * - the cache is used only while that subscription is up: when the connection drops, everything
 *   is forgotten and every request goes to the database until it is back;
 * - an entry lives at most `ttlMs` whatever happens (an announcement that could not be sent).
 * Unknown and revoked keys are never remembered: they are looked up every time.
 */
export class ApiKeyCache implements ApiKeyLookup {
  private readonly entries = new Map<string, { record: ApiKeyRecord; expiresAt: number }>();
  /** Bumped by every forgetting, so a lookup that raced with it does not store what it read. */
  private generation = 0;
  private subscriber: RedisClient | null = null;
  private listening = false;
  private closed = false;
  private warned = false;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly options: {
      redisUrl: string | RedisTarget;
      /** Channel of revocation announcements, shared by the deployment's API instances. */
      channel: string;
      logger: Logger;
      ttlMs?: number;
      maxEntries?: number;
      /** What entries' ages are measured with (tests pass one they move by hand). */
      clock?: Clock;
    },
  ) {}

  private nowMs(): number {
    return (this.options.clock ?? systemClock).now().getTime();
  }

  private get ttlMs(): number {
    return this.options.ttlMs ?? 10_000;
  }

  /** Whether remembered keys are used now (the revocation channel is subscribed). */
  get isListening(): boolean {
    return this.listening;
  }

  /** Opens the revocation subscription (first use does too) and resolves once it is confirmed. */
  start(): Promise<void> {
    this.listen();
    if (this.listening) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async find(keyHash: string, load: () => Promise<ApiKeyRecord | null>): Promise<ApiKeyRecord | null> {
    this.listen();
    const hit = this.entries.get(keyHash);
    if (hit && this.listening && hit.expiresAt > this.nowMs()) return hit.record;
    const generation = this.generation;
    const record = await load();
    if (record && !record.revokedAt && this.listening && generation === this.generation) this.remember(keyHash, record);
    return record;
  }

  /** Forgets a key here and announces it to the other instances (after its revocation committed). */
  async revoked(keyId: string, publisher: RedisClient): Promise<void> {
    this.forget(keyId);
    try {
      await publisher.publish(this.options.channel, keyId);
    } catch (err) {
      // The other instances forget it when their entry expires (ttlMs).
      this.options.logger.error({ err: { message: (err as Error).message }, keyId }, 'could not announce an API key revocation');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopUsing();
    for (const resolve of this.waiting.splice(0)) resolve();
    const subscriber = this.subscriber;
    this.subscriber = null;
    if (subscriber) await subscriber.quit().catch(() => subscriber.disconnect());
  }

  private remember(keyHash: string, record: ApiKeyRecord): void {
    if (this.entries.size >= (this.options.maxEntries ?? 10_000)) {
      // Maps keep insertion order: drop the oldest entry.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.delete(keyHash);
    this.entries.set(keyHash, { record, expiresAt: this.nowMs() + this.ttlMs });
  }

  private forget(keyId: string): void {
    this.generation++;
    for (const [hash, entry] of this.entries) if (entry.record.id === keyId) this.entries.delete(hash);
  }

  private stopUsing(): void {
    this.listening = false;
    this.generation++;
    this.entries.clear();
  }

  /** Opens the subscription on first use; the cache is used only once it is confirmed. */
  private listen(): void {
    if (this.subscriber || this.closed) return;
    const subscriber = connectRedis(this.options.redisUrl, {
      connectionName: 'stablegate-api-key-cache',
      maxRetriesPerRequest: null,
      retryStrategy: (times: number) => Math.min(times * 200, 2000),
    });
    this.subscriber = subscriber;
    subscriber.on('message', (channel: string, keyId: string) => {
      if (channel === this.options.channel) this.forget(keyId);
    });
    // 'ready' comes on the first connection and on every reconnection: subscribe (again) and only
    // then trust the cache. Anything missed while the connection was down was forgotten with it.
    subscriber.on('ready', () => {
      subscriber.subscribe(this.options.channel).then(
        () => {
          if (this.subscriber !== subscriber || subscriber.status !== 'ready') return;
          this.listening = true;
          this.warned = false;
          for (const resolve of this.waiting.splice(0)) resolve();
        },
        () => this.stopUsing(),
      );
    });
    subscriber.on('close', () => this.stopUsing());
    subscriber.on('error', (err: Error) => {
      this.stopUsing();
      if (this.warned) return;
      this.warned = true;
      this.options.logger.warn({ err: { message: err.message } }, 'API key cache: revocation channel unavailable; keys are checked in the database');
    });
  }
}
