import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import { eventually } from './wait';

/**
 * Adds one job to a queue and waits until a worker has completed it (tests drive repeatable
 * work explicitly instead of waiting for a scheduler's interval).
 */
export async function addJobsAndWait(queue: Queue, count = 1, timeoutMs = 15_000): Promise<void> {
  const tag = randomBytes(4).toString('hex');
  const jobs = await queue.addBulk(
    Array.from({ length: count }, (_, i) => ({ name: queue.name, data: {}, opts: { jobId: `${queue.name}-test-${tag}-${i}` } })),
  );
  const deadline = Date.now() + timeoutMs;
  for (const job of jobs) {
    await eventually(
      async () => {
        const state = await queue.getJobState(job.id!);
        if (state === 'failed') throw new Error(`job ${job.id} failed: ${(await queue.getJob(job.id!))?.failedReason}`);
        return state === 'completed';
      },
      Math.max(0, deadline - Date.now()),
      `job ${job.id} to complete`,
    );
  }
}
