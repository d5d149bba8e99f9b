import { releaseCooledDownAddresses } from '../../core/pool/cooldown';
import type { Processor } from './types';

/** Returns pool addresses whose cooldown has ended to available (recycled_at set). */
export const poolCooldownProcessor: Processor<'pool-cooldown'> = async (ctx) => {
  const released = await releaseCooledDownAddresses(ctx.db, ctx.clock.now());
  if (released > 0) ctx.logger.debug({ released }, 'pool addresses returned from cooldown');
  return { released };
};
