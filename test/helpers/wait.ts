/**
 * Waiting in tests: for a condition, never for a fixed time. A fixed sleep is either too short on a
 * loaded machine (a flaky failure) or longer than needed everywhere else (a slow suite).
 */

/**
 * Polls `probe` until it returns a truthy value, and returns that value; fails after `timeoutMs`
 * naming what it waited for. The poll interval only bounds how late the wait notices.
 */
export async function eventually<T>(
  probe: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs = 15_000,
  what = 'condition',
  intervalMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Retries `attempt` until it stops throwing; fails with its last error after `timeoutMs`. */
export async function eventuallySucceeds<T>(attempt: () => Promise<T>, timeoutMs = 15_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}
