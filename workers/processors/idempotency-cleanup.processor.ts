import { deleteExpiredIdempotencyRecords } from '../../core/platform/idempotency';
import type { Processor } from './types';

/** Removes Idempotency-Key records past their 24 hours. */
export const idempotencyCleanupProcessor: Processor<'idempotency-cleanup'> = async (ctx) => {
  const removed = await deleteExpiredIdempotencyRecords(ctx.db, ctx.clock.now());
  return { removed };
};
