import type { Logger } from '../core/platform/logger';
import type { ChainRegistry } from '../core/chains/registry';
import type { Config } from '../core/platform/config';
import { countSchedulerRestored } from '../core/platform/metrics';
import { repeatableSchedules, type Queues, type ScheduleDefinition } from '../core/jobs/catalog';

/**
 * Registers every repeatable job with BullMQ job schedulers. Upserting is idempotent, so every
 * worker process does it at start; a scheduler makes its next job only when the previous one
 * starts, so a slow run never piles up copies.
 */
export async function registerSchedulers(queues: Queues, config: Config, registry: ChainRegistry, logger: Logger): Promise<void> {
  for (const s of repeatableSchedules(config, registry)) {
    await upsertSchedule(queues, s);
    logger.debug({ queue: s.queue, schedulerId: s.schedulerId, everyMs: s.everyMs }, 'job scheduler registered');
  }
}

/**
 * Creates again every expected job scheduler that Redis no longer holds (its keys deleted by an
 * operator, evicted, or lost in a failover to a replica: no reconnect tells of it). Those present
 * are left alone: an upsert would move their next run. Returns the ids re-created.
 */
export async function restoreMissingSchedulers(queues: Queues, config: Config, registry: ChainRegistry, logger: Logger): Promise<string[]> {
  const restored: string[] = [];
  for (const s of repeatableSchedules(config, registry)) {
    if (await queues[s.queue].getJobScheduler(s.schedulerId)) continue;
    await upsertSchedule(queues, s);
    countSchedulerRestored(s.queue);
    restored.push(s.schedulerId);
  }
  if (restored.length > 0) logger.warn({ schedulers: restored }, `job schedulers missing from Redis re-created (${restored.length}): its keys were deleted, evicted or lost`);
  return restored;
}

async function upsertSchedule(queues: Queues, s: ScheduleDefinition): Promise<void> {
  await queues[s.queue].upsertJobScheduler(s.schedulerId, { every: s.everyMs }, { name: s.queue, data: s.data as never });
}
