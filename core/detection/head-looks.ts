import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import type { Chain } from '../chains/registry';
import type { ServiceContext } from '../service/context';
import { adapterFor } from './monitor';
import { recordHeadObservation } from './head-observations';
import { startHeadLookWatch } from './head-look-gaps';

/** Looks at one chain's head out at once (the first, then hedges of a held one). */
const MAX_LOOKS_OUT = 3;

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
 * the interval: a fleet of many processes asks a provider about as often as one. A look still out
 * after an interval (a call the provider holds) is hedged by another, up to MAX_LOOKS_OUT per chain:
 * one held call must not stop the evidence (issue 39). A late answer still counts when it comes (the
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
  /** Per chain: the looks out, with when each left (elapsed ms of this process). */
  const inFlight = new Map<string, Map<Promise<void>, number>>();
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
      await recordHeadObservation(ctx.db, { chainId: chain.chainId, head: head.number, askedAt, answeredAt: ctx.clock.now(), hash: head.hash, blockTimestamp: head.timestamp });
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
    const now = performance.now();
    const due = ctx.registry.list().filter((c) => {
      const out = inFlight.get(c.chainId);
      // None out, or the newest out for an interval already (held): a hedge, within the bound.
      return c.enabled && (!out || (out.size < MAX_LOOKS_OUT && now - Math.max(...out.values()) >= intervalMs));
    });
    await Promise.all(
      due.map((chain) => {
        const out = inFlight.get(chain.chainId) ?? new Map<Promise<void>, number>();
        inFlight.set(chain.chainId, out);
        const look: Promise<void> = lookAt(chain).finally(() => {
          out.delete(look);
          if (out.size === 0 && inFlight.get(chain.chainId) === out) inFlight.delete(chain.chainId);
        });
        out.set(look, now);
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
      await Promise.all([...inFlight.values()].flatMap((out) => [...out.keys()]));
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
