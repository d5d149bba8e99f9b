import type { Job } from 'bullmq';
import type { ServiceContext } from '../../core/service/context';
import type { JobPayloads, QueueName } from '../../core/jobs/catalog';

/** What a job processor receives: the shared service context; follow-up jobs go through `ctx.jobs`. */
export type WorkerContext = ServiceContext;

export type Processor<Q extends QueueName> = (ctx: WorkerContext, job: Job<JobPayloads[Q]>) => Promise<unknown>;
