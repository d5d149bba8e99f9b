import type { ServiceContext } from '../core/service/context';
import { EVENTS_CHANNEL } from '../core/events/events';
import { fanOutPendingEvents } from '../core/webhooks/relay';
import { listenToChannel } from '../core/platform/listener';

export interface EventListener {
  close(): Promise<void>;
}

/**
 * The webhook fast path: LISTEN on EVENTS_CHANNEL over one dedicated connection (counted in
 * DATABASE_POOL_SIZE, core/platform/config.ts dedicatedConnectionsFor) and, on every notification (sent
 * by emitEvent, delivered by Postgres only after the event's transaction commits), fan the
 * undispatched events out and enqueue their first attempts at once. The relay stays the recovery
 * path: a notification lost with this process or its connection only waits for the next relay
 * run. Runs overlapping in one process collapse into one more run; across processes the fan-out's
 * row locks (skip locked) create each delivery once, its first attempt enqueued once (in a batch
 * job), and the claim lets only one job send an attempt.
 */
export async function startEventListener(ctx: ServiceContext): Promise<EventListener> {
  let running: Promise<void> | null = null;
  let again = false;
  let closed = false;

  const runOnce = async () => {
    const { jobs } = await fanOutPendingEvents(ctx);
    await ctx.jobs.enqueueWebhookDeliveries(jobs, { batch: true });
  };
  const wake = () => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await runOnce();
        } catch (err) {
          // The rows are in Postgres: the relay fans them out or re-enqueues them.
          ctx.logger.warn({ err: { message: (err as Error).message } }, 'webhook fast path failed; the relay will deliver');
        }
      } while (again && !closed);
      running = null;
    })();
  };

  // Hearing at the start and again after every loss (core/platform/listener.ts): catch up on
  // whatever committed while this connection was not listening.
  const listener = await listenToChannel(
    { databaseUrl: ctx.config.databaseUrl, db: ctx.db, channel: EVENTS_CHANNEL, logger: ctx.logger },
    {
      onNotify: wake,
      onHearing: () => {
        ctx.logger.debug({ channel: EVENTS_CHANNEL }, 'listening for committed events');
        wake();
      },
      onDeaf: () => {},
    },
  );
  return {
    async close() {
      closed = true;
      await listener.close();
      await running;
    },
  };
}
