import { vacuumQueueTables } from '../../core/maintenance/vacuum-queue-tables';
import type { Processor } from './types';

/** Vacuums the queue-like tables whose dead rows have piled up (core/maintenance). */
export const tableMaintenanceProcessor: Processor<'table-maintenance'> = async (ctx) => {
  const vacuumed = await vacuumQueueTables(ctx.db, { minDeadRows: ctx.config.maintenance.vacuumMinDeadRows });
  if (vacuumed.length > 0) ctx.logger.info({ vacuumed }, 'queue tables vacuumed');
  return { vacuumed };
};
