/** Time source of the domain; tests pass one they can move. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that tests move by hand. */
export class ManualClock implements Clock {
  private offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

/**
 * Milliseconds on a monotonic clock (performance.now()): for measuring how long something took
 * or how long ago it happened in this process, never for a date. Unaffected by changes of the
 * system's time and by a ManualClock.
 */
export function elapsedMs(): number {
  return performance.now();
}
