import type { Job } from 'bullmq';
import type { ServiceContext } from '../../core/context';
import type { JobPayloads, QueueName, Queues } from '../../core/jobs/catalog';

/** What a job processor receives: the shared service context (follow-ups go through `jobs`) plus the queues. */
export interface WorkerContext extends ServiceContext {
  queues: Queues;
}

export type Processor<Q extends QueueName> = (ctx: WorkerContext, job: Job<JobPayloads[Q]>) => Promise<unknown>;
