import type { Worker } from 'bullmq';
import type { ServiceContext } from '../core/service/context';
import { createWorkerRedis, queuePrefixOf, redisTargetOf, waitForRedis } from '../core/platform/redis';
import { checkRedisFitForQueues } from '../core/platform/redis-eviction';
import { closeQueues, createQueues, type Queues } from '../core/jobs/catalog';
import { bullJobQueue } from '../core/jobs/bullmq-job-queue';
import { registerSchedulers } from './schedulers';
import { startScheduleWatch } from './schedule-watch';
import { startEventListener, type EventListener } from './event-listener';
import { startHeadWakeups } from './head-wakeups';
import { startHeadLooks } from '../core/detection/head-looks';
import { selectedQueues, startWorkers } from './worker-pool';
import { startJobWatchdog } from './job-watchdog';

export interface RunningWorkers {
  workers: Worker[];
  queues: Queues;
  /** Lets active jobs finish; at `deadline` stops waiting (their jobs return to the queue when their lock lapses). */
  close(deadline?: AbortSignal): Promise<void>;
}

/**
 * A job active this many worker database bounds with no job finishing means a stall
 * (workers/job-watchdog.ts); at least a few minutes, so a slow RPC or a long catch-up is never one.
 */
const STALL_AFTER_DATABASE_BOUNDS = 4;
const MIN_STALL_MS = 180_000;

/**
 * Starts the job tier: schedulers upserted, one worker per selected queue. `recycleDatabase`
 * (the pool's DbHandle.recycle) lets the watchdog start the pool afresh when jobs make no progress.
 */
export async function startWorkerProcess(ctx: ServiceContext, opts: { recycleDatabase?: (reason: string) => number } = {}): Promise<RunningWorkers> {
  const names = selectedQueues(ctx.config.workerQueues);
  const connection = createWorkerRedis(redisTargetOf(ctx.config));
  await waitForRedis(connection);
  await checkRedisFitForQueues(connection, ctx);
  const queues = createQueues(connection, queuePrefixOf(ctx.config));
  await registerSchedulers(queues, ctx.config, ctx.registry, ctx.logger);
  // A Redis that comes back empty (restarted without persistence) has lost the schedulers:
  // upsert them again on every reconnect (idempotent), so the relay resumes by itself.
  connection.on('ready', () => {
    registerSchedulers(queues, ctx.config, ctx.registry, ctx.logger).catch((err) =>
      ctx.logger.warn({ err: { message: (err as Error).message } }, 'could not re-register job schedulers after reconnect'),
    );
  });
  // Producer-side queue errors (Redis unreachable): one warning per outage, not one per retry.
  let redisDown = false;
  connection.on('ready', () => {
    if (redisDown) ctx.logger.info('Redis connection restored');
    redisDown = false;
  });
  for (const queue of Object.values(queues)) {
    queue.on('error', (err: Error) => {
      if (!redisDown) ctx.logger.warn({ err: { message: err.message } }, 'Redis unreachable; jobs resume when it returns');
      redisDown = true;
    });
  }
  // Follow-up jobs go out on the workers' own connection (it waits out a Redis outage).
  const workerCtx = { ...ctx, jobs: bullJobQueue(queues) };
  // The webhook fast path belongs with the relay: a process that runs the relay also listens.
  // Started before the workers: if its connection fails, nothing is left running behind the error.
  let listener: EventListener | null = null;
  try {
    if (ctx.config.webhooks.fastPath && names.includes('webhook-relay')) listener = await startEventListener(workerCtx);
  } catch (err) {
    await closeQueues(queues).catch(() => {});
    connection.disconnect();
    throw err;
  }
  const workers = startWorkers(workerCtx, connection, names);
  const heads = startHeadWakeups(workerCtx, names);
  const recycleDatabase = opts.recycleDatabase;
  const watchdog = recycleDatabase
    ? startJobWatchdog(workers, {
        stallAfterMs: Math.max(MIN_STALL_MS, STALL_AFTER_DATABASE_BOUNDS * ctx.config.databaseWorkerTimeoutMs),
        recycleDatabase,
        logger: ctx.logger,
      })
    : null;
  // Independent of the schedules it checks: a timer of this process (workers/schedule-watch.ts).
  const watch = startScheduleWatch(workerCtx, queues);
  // Evidence for attribution that no job outage stops (core/detection/head-looks.ts).
  const looks = startHeadLooks(workerCtx);
  ctx.logger.info({ queues: names, webhookFastPath: listener !== null }, 'workers started');
  return {
    workers,
    queues,
    async close(deadline) {
      // Stop taking jobs; active ones finish (or go back to the queue if the process is killed).
      watchdog?.close();
      await watch.close();
      await looks.close();
      await heads.close();
      await listener?.close();
      await closeWorkers(workers, deadline, () => ctx.logger.warn({ active: workers.filter((w) => w.isRunning()).length }, 'shutdown deadline: leaving the jobs still running to be retried'));
      await closeQueues(queues);
      connection.disconnect();
    },
  };
}

/**
 * Closes the workers, waiting for their active jobs, but not past `deadline`: then it stops
 * waiting (BullMQ's close(true) after a close() only returns the same wait) and the process exits;
 * an unfinished job's lock lapses and a worker takes it up again as stalled: retried, not lost.
 */
async function closeWorkers(workers: Worker[], deadline: AbortSignal | undefined, onForce: () => void): Promise<void> {
  const graceful = Promise.all(workers.map((w) => w.close()));
  if (!deadline) return void (await graceful);
  const forced = new Promise<void>((resolve) => {
    const force = () => {
      onForce();
      resolve();
    };
    if (deadline.aborted) force();
    else deadline.addEventListener('abort', force, { once: true });
  });
  await Promise.race([graceful, forced]);
}
