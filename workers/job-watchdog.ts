import type { Job, Worker } from 'bullmq';
import type { Logger } from '../core/platform/logger';

export interface JobWatchdog {
  close(): void;
}

/**
 * Notices this process's jobs making no progress: a job active for longer than `stallAfterMs`
 * while no job of the process has finished (completed or failed) for as long. Every database call
 * has a deadline (db/connection-deadline.ts), so this should not happen; if some path still waits
 * on a connection that went quiet without owing an answer, recycling the pool fails what waits on
 * it (the jobs are retried) and the next calls get new connections. BullMQ cannot see such a job:
 * its process is alive and keeps renewing the job's lock. At most one recycle per `stallAfterMs`.
 */
export function startJobWatchdog(workers: Worker[], opts: { stallAfterMs: number; recycleDatabase(reason: string): number; logger: Logger }): JobWatchdog {
  const active = new Map<string, { queue: string; since: number }>();
  let lastFinishedAt = performance.now();
  let lastRecycleAt = Number.NEGATIVE_INFINITY;
  const keyOf = (job: Job) => `${job.queueName}:${job.id}`;
  for (const worker of workers) {
    worker.on('active', (job) => active.set(keyOf(job), { queue: job.queueName, since: performance.now() }));
    const finished = (job: Job | undefined) => {
      lastFinishedAt = performance.now();
      if (job) active.delete(keyOf(job));
    };
    worker.on('completed', finished);
    worker.on('failed', finished);
  }
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - lastFinishedAt < opts.stallAfterMs || now - lastRecycleAt < opts.stallAfterMs) return;
    const stuck = [...active.entries()].filter(([, a]) => now - a.since > opts.stallAfterMs);
    if (stuck.length === 0) return;
    lastRecycleAt = now;
    const connections = opts.recycleDatabase(`no job finished for ${Math.round((now - lastFinishedAt) / 1000)} s`);
    opts.logger.warn(
      { stuckJobs: stuck.slice(0, 10).map(([id, a]) => ({ id, activeSeconds: Math.round((now - a.since) / 1000) })), connections, stallAfterMs: opts.stallAfterMs },
      'jobs are making no progress: recycling the database connections',
    );
  }, Math.max(1000, Math.floor(opts.stallAfterMs / 4)));
  timer.unref();
  return { close: () => clearInterval(timer) };
}
