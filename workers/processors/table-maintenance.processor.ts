import { vacuumQueueTables } from '../../core/maintenance/vacuum-queue-tables';
import { foldListCounts } from '../../core/maintenance/list-counts';
import { withLongStatements } from '../../core/maintenance/long-statements';
import type { Processor } from './types';

/** Vacuums the queue-like tables whose dead rows have piled up and folds the list counts (core/maintenance). */
export const tableMaintenanceProcessor: Processor<'table-maintenance'> = async (ctx) => {
  // VACUUM of a large table outlasts a worker's database bound: its own connection, a longer one.
  const vacuumed = await withLongStatements(ctx.config, (db) => vacuumQueueTables(db, { minDeadRows: ctx.config.maintenance.vacuumMinDeadRows }));
  if (vacuumed.length > 0) ctx.logger.info({ vacuumed }, 'queue tables vacuumed');
  const countRowsFolded = await foldListCounts(ctx.db);
  return { vacuumed, countRowsFolded };
};
