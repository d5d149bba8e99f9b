/**
 * A turn of work repeated on a plain timer that never keeps the process alive, never runs twice at
 * once (a slow turn is not stacked: the next tick finds it still out and waits for the one after),
 * and is closed by waiting for the turn out. The turn handles its own errors. The watches that must
 * go on whatever the job queue does (the job-scheduler and stall watch, the head-look watch) share it.
 */
export interface RepeatingTurn {
  /** One turn now, or the one already out; resolves when it is done (tests). */
  runOnce(): Promise<void>;
  close(): Promise<void>;
}

export function startRepeatingTurn(everyMs: number, turn: () => Promise<void>): RepeatingTurn {
  let current: Promise<void> | null = null;
  let closed = false;
  const runOnce = (): Promise<void> => {
    if (closed) return Promise.resolve();
    current ??= turn().finally(() => (current = null));
    return current;
  };
  const timer = setInterval(() => void runOnce(), everyMs);
  timer.unref();
  return {
    runOnce,
    async close() {
      closed = true;
      clearInterval(timer);
      await current;
    },
  };
}
