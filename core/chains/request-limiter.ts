/**
 * What every chain family's HTTP client needs per provider: a bound on requests in flight and on
 * their start rate (a provider's budget).
 */

/** Bounds requests in flight and their start rate for one provider. */
export class RequestLimiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private nextStart = 0;

  constructor(
    private readonly maxConcurrent: number,
    private readonly requestsPerSecond: number,
  ) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.maxConcurrent) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      if (this.requestsPerSecond > 0) {
        const now = Date.now();
        const start = Math.max(now, this.nextStart);
        this.nextStart = start + 1000 / this.requestsPerSecond;
        if (start > now) await new Promise((r) => setTimeout(r, start - now));
      }
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}
