import { pruneHistory } from '../../core/maintenance/history-retention';
import type { Processor } from './types';

/** Deletes delivered events, their deliveries and attempts past RETENTION_EVENT_DAYS (core/maintenance). */
export const historyRetentionProcessor: Processor<'history-retention'> = async (ctx) => {
  const { eventDays, batchSize, maxBatchesPerRun } = ctx.config.retention;
  const removed = await pruneHistory(ctx.db, ctx.clock.now(), { eventDays, batchSize, maxBatches: maxBatchesPerRun });
  if (removed.events > 0) ctx.logger.info({ removed, eventDays }, 'history past its retention deleted');
  return removed;
};
