import pLimit, { type LimitFunction } from 'p-limit';
import { systemClock, type Clock } from '../platform/clock';
import { urlOrigin, withUrlsReduced } from '../platform/provider-urls';

/**
 * The providers of one chain, as every family's client uses them (EVM JSON-RPC, Tron HTTP, Solana
 * kit transport; design.md §3, issues 17, 27, 38). The family says how to send one request to one
 * provider and what a failure means; the pool does the rest:
 * - rotation: a call starts at the provider that answered last and moves on to the next one that
 *   is not backed off; when every provider is backed off the call fails at once with the family's
 *   "unavailable" error and the job tries again on its next tick (nothing is skipped: the
 *   checkpoint only moves past what was read);
 * - back-off per provider on the injected clock (tests step it): exponential from baseBackoffMs,
 *   capped at maxBackoffMs; a rate-limit answer waits the family's penalty window instead;
 * - a per-provider budget: requests in flight (p-limit) and requests started per second;
 * - one warning line per failure episode (and one per rate-limit answer), one when the provider
 *   answers again, naming a provider by its origin only (scheme, host, port), never its path or
 *   query, which may carry a key.
 */

/** The part of a pino logger the pool uses. */
export interface ProviderPoolLogger {
  warn(fields: object, message: string): void;
}

/** What a failed attempt says, as the family reads it. */
export type AttemptFailure =
  /** The request's own fault (a refused range): thrown to the caller at once, the provider keeps its standing. */
  | { kind: 'request' }
  /** The provider failed (unreachable, timed out, an error answer): exponential back-off. */
  | { kind: 'provider'; status?: number }
  /** The provider limits us (429, TronGrid's 403): its penalty window, or what it asked for. */
  | { kind: 'rate-limited'; status: number; backoffMs?: number | null };

export interface ProviderPoolOptions {
  chainId: string;
  /** How log lines name the family: "Tron provider failed: …". */
  family: string;
  /** The family's error when no provider answered (a ProviderUnavailableError for the detection core). */
  unavailable: (cause: unknown) => Error;
  /** Reads a failed attempt; every failure is the provider's when absent. */
  classify?: (err: unknown) => AttemptFailure;
  clock?: Clock;
  logger?: ProviderPoolLogger;
  /** First back-off after a failure; doubles per consecutive failure up to maxBackoffMs. */
  baseBackoffMs: number;
  maxBackoffMs: number;
  /** Back-off after a rate-limit answer that names no wait of its own. */
  rateLimitBackoffMs?: number;
  /** Requests in flight per provider (unbounded when absent). */
  maxConcurrent?: number;
  /** Requests started per second per provider (0 or absent: unlimited). */
  requestsPerSecond?: number;
}

/** One provider of the pool: the family's handle on it and its standing. */
export interface PoolProvider<T> {
  readonly target: T;
  /** scheme://host:port: what logs and errors may name. */
  readonly origin: string;
  failures: number;
  /** Clock milliseconds before which the provider is not asked. */
  downUntil: number;
  readonly budget: (run: () => Promise<unknown>) => Promise<unknown>;
}

export class ProviderPool<T> {
  readonly providers: readonly PoolProvider<T>[];
  private current = 0;
  private answered = false;
  private readonly clock: Clock;

  constructor(
    targets: readonly { url: string; target: T }[],
    private readonly options: ProviderPoolOptions,
  ) {
    if (targets.length === 0) throw new Error(`Chain ${options.chainId} has no RPC URL`);
    this.clock = options.clock ?? systemClock;
    this.providers = targets.map(({ url, target }) => ({ target, origin: urlOrigin(url), failures: 0, downUntil: 0, budget: requestBudget(options, this.clock) }));
  }

  get origins(): string[] {
    return this.providers.map((p) => p.origin);
  }

  /** Whether any provider of the chain has answered since this process built the pool. */
  get anyAnswered(): boolean {
    return this.answered;
  }

  /**
   * Sends one request through the first provider that answers, within its budget. `fields` are
   * added to the failure lines (the method or path: never parameters, which may name a key).
   */
  async run<R>(send: (target: T, origin: string) => Promise<R>, fields: object = {}): Promise<R> {
    let lastError: unknown = null;
    const n = this.providers.length;
    const start = this.current;
    for (let attempt = 0; attempt < n; attempt++) {
      const index = (start + attempt) % n;
      const p = this.providers[index];
      const now = this.clock.now().getTime();
      if (p.downUntil > now) {
        lastError ??= new Error(`${p.origin} backed off until ${new Date(p.downUntil).toISOString()}`);
        continue;
      }
      try {
        const answer = (await p.budget(() => send(p.target, p.origin))) as R;
        if (p.failures > 0) this.options.logger?.warn({ chainId: this.options.chainId, provider: p.origin }, `${this.options.family} provider answers again`);
        p.failures = 0;
        this.answered = true;
        this.current = index;
        return answer;
      } catch (err) {
        const failure = this.options.classify?.(err) ?? { kind: 'provider' };
        if (failure.kind === 'request') {
          this.answered = true; // it answered, refusing the request
          throw err;
        }
        lastError = err;
        this.backOff(p, failure, err, fields);
        this.current = (index + 1) % n;
      }
    }
    throw this.options.unavailable(lastError);
  }

  private backOff(p: PoolProvider<T>, failure: Exclude<AttemptFailure, { kind: 'request' }>, err: unknown, fields: object): void {
    const { baseBackoffMs, maxBackoffMs, rateLimitBackoffMs = maxBackoffMs } = this.options;
    p.failures++;
    const limited = failure.kind === 'rate-limited';
    const delay = limited ? (failure.backoffMs ?? rateLimitBackoffMs) : Math.min(maxBackoffMs, baseBackoffMs * 2 ** (p.failures - 1));
    p.downUntil = this.clock.now().getTime() + delay;
    // One line per episode (the first failure), not one per retry of a provider that stays down.
    // A client's error (ethers') may quote the URL, whose path or query may hold a key: origins only.
    if (p.failures > 1 && !limited) return;
    this.options.logger?.warn(
      { chainId: this.options.chainId, provider: p.origin, ...fields, status: failure.status || undefined, backoffMs: delay, error: withUrlsReduced(err instanceof Error ? err.message : String(err)) },
      `${this.options.family} provider ${limited ? 'rate-limited us' : 'failed'}: backing off and using the next one`,
    );
  }
}

/** A provider's budget: requests in flight (p-limit), then the spacing of their starts. */
function requestBudget(options: ProviderPoolOptions, clock: Clock): PoolProvider<unknown>['budget'] {
  const inFlight: LimitFunction | null = options.maxConcurrent ? pLimit(options.maxConcurrent) : null;
  const spacing = options.requestsPerSecond ? new StartSpacing(1000 / options.requestsPerSecond, clock) : null;
  const spaced = spacing ? async (run: () => Promise<unknown>) => (await spacing.wait(), run()) : (run: () => Promise<unknown>) => run();
  return inFlight ? (run) => inFlight(() => spaced(run)) : spaced;
}

/**
 * Starts requests at least 1/rate seconds apart (no bursts: TronGrid penalises them), on the
 * injected clock. Not p-throttle: it reads the system time itself (Date.now) and takes no clock (8.1), so it would
 * be the one part of the pool a test's clock does not reach; the rule is three lines.
 */
class StartSpacing {
  private nextStartMs = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly clock: Clock,
  ) {}

  async wait(): Promise<void> {
    const now = this.clock.now().getTime();
    const start = Math.max(now, this.nextStartMs);
    this.nextStartMs = start + this.intervalMs;
    if (start > now) await new Promise((resolve) => setTimeout(resolve, start - now));
  }
}
