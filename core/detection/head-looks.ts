import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import type { Chain } from '../chains/registry';
import type { ServiceContext } from '../service/context';
import { adapterFor } from './monitor';
import { recordHeadObservation } from './head-observations';
import { startHeadLookWatch } from './head-look-gaps';

/**
 * Looks at every enabled chain's head by a plain timer of each long-running process, API and
 * workers alike (issues 37 and 39). Attribution (attribution.ts) credits a payment to an order only
 * when a look taken at most L before the order began saw a head below the payment's block; until
 * now only the workers' scan jobs looked, so while every worker was down (a deploy of the job tier),
 * Redis had lost or not yet restored the job schedules, or a job backlog held the scans, the API
 * went on handing addresses out with no look behind them, and the fast payers of those orders were
 * left `undecidable`. This timer depends on nothing but the database and the chain's providers.
 *
 * Every HEAD_LOOK_INTERVAL_MS (keep it below the chain's L, HEAD_LAG_SECONDS) each chain is looked
 * at unless some process (a scan, a pushed head, another process's look) has looked within half
 * the interval: a fleet of many processes asks a provider about as often as one. A look whose
 * provider is slow is not repeated while it is out; its answer still counts when it comes (the
 * observation is dated by the request's departure, head-observations.ts). A turn that fails is
 * logged once per outage and the next turn tries again; the timer never keeps the process alive.
 * Every process that looks also watches the looks (head-look-gaps.ts): looks that stop while
 * addresses are handed out are logged, shown in /health and alerted after HEAD_LOOK_ALERT_AFTER_SECONDS.
 */
export interface HeadLooks {
  /** One look at every chain due now; resolves when each has answered or failed (tests). */
  runOnce(): Promise<void>;
  close(): Promise<void>;
}

export function startHeadLooks(ctx: ServiceContext): HeadLooks {
  const intervalMs = ctx.config.intervals.headLookMs;
  const inFlight = new Map<string, Promise<void>>();
  const failing = new Set<string>();
  let closed = false;

  const lookAt = async (chain: Chain): Promise<void> => {
    const adapter = adapterFor(ctx, chain);
    if (!adapter) return;
    try {
      // Half the interval: consecutive looks stay at most about 1.5 intervals apart, below L.
      if (await lookedWithin(ctx.db, chain.chainId, new Date(ctx.clock.now().getTime() - intervalMs / 2))) return;
      const askedAt = ctx.clock.now();
      const head = await adapter.head();
      await recordHeadObservation(ctx.db, { chainId: chain.chainId, head: head.number, askedAt, answeredAt: ctx.clock.now(), hash: head.hash });
      if (failing.delete(chain.chainId)) ctx.logger.info({ chainId: chain.chainId }, 'head looks working again');
    } catch (err) {
      if (!failing.has(chain.chainId)) {
        ctx.logger.warn({ chainId: chain.chainId, err: { message: (err as Error).message } }, 'could not look at the chain head; looks go on');
      }
      failing.add(chain.chainId);
    }
  };

  const runOnce = async (): Promise<void> => {
    if (closed) return;
    const due = ctx.registry.list().filter((c) => c.enabled && !inFlight.has(c.chainId));
    await Promise.all(
      due.map((chain) => {
        const look = lookAt(chain).finally(() => inFlight.delete(chain.chainId));
        inFlight.set(chain.chainId, look);
        return look;
      }),
    );
  };

  const timer = setInterval(() => void runOnce(), intervalMs);
  timer.unref();
  void runOnce();
  const watch = startHeadLookWatch(ctx);
  return {
    runOnce,
    async close() {
      closed = true;
      clearInterval(timer);
      await watch.close();
      await Promise.all(inFlight.values());
    },
  };
}

/**
 * Whether any process recorded a look at the chain's head departing at or after `since`: the
 * newest height's row carries the latest look (a look at an older height than the newest is left
 * out, head-observations.ts). One index step.
 */
async function lookedWithin(db: DbOrTx, chainId: string, since: Date): Promise<boolean> {
  const rows = (await db.execute(sql`
    select last_seen_at >= ${since.toISOString()}::timestamptz as fresh
    from chain_head_observations where chain_id = ${chainId}
    order by head_number desc limit 1`)) as unknown as { fresh: boolean }[];
  return rows[0]?.fresh === true;
}
