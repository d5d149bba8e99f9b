import { Worker, type ConnectionOptions } from 'bullmq';
import { QUEUE_NAMES, QUEUES, type QueueName } from '../core/jobs/catalog';
import { queuePrefixOf } from '../core/platform/redis';
import { PROCESSORS } from './processors';
import type { WorkerContext } from './processors/types';

/** Which queues this process consumes (WORKER_QUEUES), checked against the catalog. */
export function selectedQueues(selection: 'all' | string[]): QueueName[] {
  if (selection === 'all') return [...QUEUE_NAMES];
  const unknown = selection.filter((q) => !QUEUE_NAMES.includes(q as QueueName));
  if (unknown.length > 0) throw new Error(`WORKER_QUEUES names unknown queues: ${unknown.join(', ')} (known: ${QUEUE_NAMES.join(', ')})`);
  return selection as QueueName[];
}

/** Starts one BullMQ worker per selected queue. */
export function startWorkers(ctx: WorkerContext, connection: ConnectionOptions, names: QueueName[]): Worker[] {
  return names.map((name) => {
    const processor = PROCESSORS[name] as (c: WorkerContext, job: unknown) => Promise<unknown>;
    const worker = new Worker(name, (job) => processor(ctx, job), {
      connection,
      prefix: queuePrefixOf(ctx.config),
      concurrency: QUEUES[name].concurrency,
      autorun: true,
    });
    worker.on('error', (err) => ctx.logger.error({ err, queue: name }, 'worker error'));
    worker.on('failed', (job, err) => ctx.logger.warn({ queue: name, jobId: job?.id, err: { message: err.message } }, 'job failed'));
    return worker;
  });
}
