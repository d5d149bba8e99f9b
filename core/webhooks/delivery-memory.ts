import pLimit, { type LimitFunction } from 'p-limit';
import { queryPoolSizeFor } from '../platform/config';

/**
 * What webhook delivery keeps per process (the service assembles it into ServiceContext.memory,
 * core/service/process-memory.ts).
 */
export interface WebhooksMemory {
  /**
   * Database work of deliveries, at most (query pool - 2) statements or transactions at once, so
   * the fan-out (listener, relay) always finds a free connection. postgres.js (3.4.9) is known to
   * wedge a pool oversubscribed with transactions (porsager/postgres#823, #1033): seen here as a
   * worker whose queries never returned when every attempt of 20 batches was applied on its own.
   */
  readonly webhookDatabaseWork: LimitFunction;
}

export function newWebhooksMemory(config: Parameters<typeof queryPoolSizeFor>[0]): WebhooksMemory {
  return { webhookDatabaseWork: pLimit(Math.max(1, queryPoolSizeFor(config, 'worker') - 2)) };
}
