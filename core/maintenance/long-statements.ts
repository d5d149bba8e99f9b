import { createDb, type Database } from '../../db/client';
import type { Config } from '../platform/config';

/**
 * Runs `work` on a connection of its own whose calls may take DATABASE_MAINTENANCE_TIMEOUT_MS, for
 * the statements known to outlast a worker's bound (DATABASE_WORKER_TIMEOUT_MS): VACUUM of a
 * large table, DETACH PARTITION … CONCURRENTLY (it waits for every older transaction), ATTACH
 * PARTITION (it scans the partition) and dropping a month's tables (it waits for their lock). The
 * connection is opened for the run and closed after it, so every other call keeps the short bound.
 */
export async function withLongStatements<T>(config: Pick<Config, 'databaseUrl' | 'databaseMaintenanceTimeoutMs'>, work: (db: Database) => Promise<T>): Promise<T> {
  const handle = createDb(config.databaseUrl, { max: 1, answerWithinMs: config.databaseMaintenanceTimeoutMs });
  try {
    return await work(handle.db);
  } finally {
    await handle.close();
  }
}
