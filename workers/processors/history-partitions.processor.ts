import { createPartitionsAhead, dropExpiredPartitions } from '../../core/maintenance/history-partitions';
import { withLongStatements } from '../../core/maintenance/long-statements';
import type { Processor } from './types';

/** Keeps the webhook history's months ahead and drops those past RETENTION_EVENT_DAYS (core/maintenance). */
export const historyPartitionsProcessor: Processor<'history-partitions'> = async (ctx) => {
  const now = ctx.clock.now();
  const created = await createPartitionsAhead(ctx.db, now);
  // Detaching (concurrently) and dropping months wait on other transactions: a longer bound, on a connection of their own.
  const { dropped, kept } = await withLongStatements(ctx.config, (db) => dropExpiredPartitions(db, now, ctx.config.retention.eventDays));
  if (created.length || dropped.length) ctx.logger.info({ created, dropped }, 'webhook history partitions created or dropped');
  if (kept.length) ctx.logger.info({ kept }, 'months past retention kept: something in them is still owed (pending delivery or alert e-mail, or an event not fanned out)');
  return { created, dropped, kept };
};
