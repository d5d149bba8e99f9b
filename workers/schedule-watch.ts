import type { ServiceContext } from '../core/service/context';
import type { Queues } from '../core/jobs/catalog';
import { watchChainStalls } from '../core/detection/stall';
import { startRepeatingTurn } from '../core/platform/repeating-turn';
import { restoreMissingSchedulers } from './schedulers';

/**
 * Each worker process's own watch over the job tier (issue 37): a plain timer in the process, not a
 * job, so it still runs when the jobs it watches are gone. Every SCHEDULE_WATCH_INTERVAL_MS it
 *   1. re-creates the expected job schedulers Redis no longer holds (a FLUSHDB, an eviction, a
 *      failover to a replica that lost them: no reconnect tells of those), and
 *   2. judges every enabled chain's stall from the database (core/detection/stall.ts), so a chain
 *      no scan reaches any more is alerted once, by whichever process gets there first (the
 *      episode row is locked).
 * A turn that fails (Redis or the database away) is logged and the next turn tries again; turns
 * never overlap, and the timer never keeps the process alive.
 */
export interface ScheduleWatch {
  /** One turn now (tests, and the first turn at start); resolves when it is done. */
  runOnce(): Promise<void>;
  close(): Promise<void>;
}

export function startScheduleWatch(ctx: ServiceContext, queues: Queues): ScheduleWatch {
  const failing = { schedulers: false, stalls: false };

  const part = async (name: keyof typeof failing, work: () => Promise<unknown>) => {
    try {
      await work();
      if (failing[name]) ctx.logger.info(`${name === 'schedulers' ? 'job scheduler' : 'chain stall'} watch working again`);
      failing[name] = false;
    } catch (err) {
      // One warning per outage: the outage itself is reported where it is met (Redis, /health).
      if (!failing[name]) ctx.logger.warn({ err: { message: (err as Error).message } }, `${name === 'schedulers' ? 'job scheduler' : 'chain stall'} watch failed; it tries again`);
      failing[name] = true;
    }
  };

  const turn = async () => {
    await part('schedulers', () => restoreMissingSchedulers(queues, ctx.config, ctx.registry, ctx.logger));
    await part('stalls', () => watchChainStalls(ctx));
  };

  return startRepeatingTurn(ctx.config.intervals.scheduleWatchMs, turn);
}
