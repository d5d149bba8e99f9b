import { checkPoolLevels } from '../../core/pool/alerts';
import type { Processor } from './types';

/** Raises alert.address_pool_low once per crossing (and clears it on recovery). */
export const poolLowCheckProcessor: Processor<'pool-low-check'> = async (ctx) => {
  const outcomes = await checkPoolLevels(ctx.db, ctx.clock.now());
  const alerts = outcomes.filter((o) => o.eventId).map((o) => ({ organizationId: o.organizationId, protocol: o.protocol, eventId: o.eventId }));
  if (alerts.length > 0) ctx.logger.info({ alerts }, 'address pool low');
  return { checked: outcomes.length, alerted: alerts.length };
};
