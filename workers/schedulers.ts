import type { Logger } from '../core/platform/logger';
import type { ChainRegistry } from '../core/chains/registry';
import type { Config } from '../core/platform/config';
import { repeatableSchedules, type Queues } from '../core/jobs/catalog';

/**
 * Registers every repeatable job with BullMQ job schedulers. Upserting is idempotent, so every
 * worker process does it at start; a scheduler makes its next job only when the previous one
 * starts, so a slow run never piles up copies.
 */
export async function registerSchedulers(queues: Queues, config: Config, registry: ChainRegistry, logger: Logger): Promise<void> {
  for (const s of repeatableSchedules(config, registry)) {
    const queue = queues[s.queue];
    await queue.upsertJobScheduler(s.schedulerId, { every: s.everyMs }, { name: s.queue, data: s.data as never });
    logger.debug({ queue: s.queue, schedulerId: s.schedulerId, everyMs: s.everyMs }, 'job scheduler registered');
  }
}
