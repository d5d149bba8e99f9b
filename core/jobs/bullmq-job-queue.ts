import type { Queue } from 'bullmq';
import type { RedisClient, RedisTarget } from '../platform/redis';
import { createProducerRedis } from '../platform/redis';
import { closeQueues, createQueues, type Queues } from './catalog';
import type { JobQueue } from './job-queue';
import { enqueueWebhookDeliveries } from './webhook-jobs';

/** The JobQueue port over BullMQ queues (the API's and the workers' own connections). */
export function bullJobQueue(queues: Queues): JobQueue {
  return {
    async enqueue(queue, data, opts = {}) {
      // Queue<T> is invariant in T; the catalog's mapped type already ties `data` to `queue`.
      const q = queues[queue] as unknown as Queue;
      await q.add(queue, data, { ...(opts.jobId ? { jobId: opts.jobId } : {}), delay: Math.max(0, opts.delayMs ?? 0) });
    },
    enqueueWebhookDeliveries: (jobs, opts) => enqueueWebhookDeliveries(queues, jobs, opts),
  };
}

export interface ClosableJobQueue extends JobQueue {
  close(): Promise<void>;
}

/**
 * A JobQueue that opens its producer connection (fail-fast, like the API's) on first use: a process
 * that never enqueues (a CLI, a tier that brings its own queues) never connects to Redis for it.
 */
export function lazyJobQueue(redisUrl: string | RedisTarget, prefix: string): ClosableJobQueue {
  let opened: { redis: RedisClient; queues: Queues; port: JobQueue } | null = null;
  const open = () => {
    if (!opened) {
      const redis = createProducerRedis(redisUrl);
      const queues = createQueues(redis, prefix);
      opened = { redis, queues, port: bullJobQueue(queues) };
    }
    return opened.port;
  };
  return {
    enqueue: (queue, data, opts) => open().enqueue(queue, data, opts),
    enqueueWebhookDeliveries: (jobs, opts) => open().enqueueWebhookDeliveries(jobs, opts),
    async close() {
      if (!opened) return;
      const { redis, queues } = opened;
      opened = null;
      await closeQueues(queues).catch(() => {});
      redis.disconnect();
    },
  };
}
