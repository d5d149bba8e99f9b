import { chainCheckpoints } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { stallReason, stallSince, type StallReason } from './stall';

/**
 * Which chains are degraded now, read from the database alone (issue 37): what /health and the
 * payment page say, true whatever stopped the scans (workers down, job schedules lost with Redis's
 * keys, providers failing), since no job has to run for it to be read. A chain is degraded
 *   - in a stall episode the stall watch started (stall.ts: its reason and start, as alerted);
 *   - whose stored state is past CHAIN_STALL_ALERT_SECONDS now, episode or not (the same rule,
 *     judged at the moment of asking: no worker may be alive to start the episode);
 *   - enabled, whose providers never answered a head (no checkpoint yet) NEVER_ANSWERED_GRACE_MS
 *     after this process started: a deployment whose providers are all unreachable from the start.
 */

export type ChainHealthReason = StallReason | 'never_answered';

export interface DegradedChain {
  chainId: string;
  reason: ChainHealthReason | string;
  since: Date;
  head: number | null;
  checkpoint: number | null;
}

/** How long after start a chain may have no head yet (the first scans ask within seconds). */
export const NEVER_ANSWERED_GRACE_MS = 60_000;

type HealthContext = Pick<ServiceContext, 'db' | 'registry' | 'config'>;

/** When this process began to expect chains' heads: the first time it asked (an API app's build). */
export function healthStartedAt(ctx: Pick<ServiceContext, 'detection' | 'clock'>): Date {
  return (ctx.detection.healthStartedAt ??= ctx.clock.now());
}

/** Every degraded chain at `now`; `startedAt` is when this process began to expect heads. */
export async function degradedChains(ctx: HealthContext, now: Date, startedAt: Date): Promise<DegradedChain[]> {
  const rows = await ctx.db.select().from(chainCheckpoints);
  const enabled = new Set(ctx.registry.list().filter((c) => c.enabled).map((c) => c.chainId));
  const out: DegradedChain[] = [];
  for (const row of rows) {
    const facts = { head: row.headNumber, checkpoint: row.blockNumber };
    if (row.stalledSince) {
      out.push({ chainId: row.chainId, reason: row.stallReason ?? 'unknown', since: row.stalledSince, ...facts });
      continue;
    }
    // A row of a chain this deployment no longer scans says nothing about it.
    if (!enabled.has(row.chainId)) continue;
    const reason = stallReason(row, now, ctx.config.chainStallAlertMs);
    if (reason) out.push({ chainId: row.chainId, reason, since: stallSince(row, reason, now), ...facts });
  }
  if (now.getTime() - startedAt.getTime() >= NEVER_ANSWERED_GRACE_MS) {
    const known = new Set(rows.map((r) => r.chainId));
    for (const chainId of enabled) {
      if (!known.has(chainId)) out.push({ chainId, reason: 'never_answered', since: startedAt, head: null, checkpoint: null });
    }
  }
  return out;
}

/** Degraded chains read this long ago still answer the payment page. */
const DEGRADED_READ_TTL_MS = 5000;

/**
 * Whether a chain is degraded, for a page that asks on every poll (the payment page): the answer
 * is kept per process for a few seconds, so open pages cost one small read per interval, not one
 * per poll.
 */
export async function isChainDegraded(ctx: HealthContext & Pick<ServiceContext, 'detection' | 'clock'>, chainId: string, now: Date): Promise<boolean> {
  const at = now.getTime();
  let read = ctx.detection.degradedChainsRead;
  if (!read || at - read.at >= DEGRADED_READ_TTL_MS || at < read.at) {
    const chainIds = degradedChains(ctx, now, healthStartedAt(ctx)).then((list) => new Set(list.map((c) => c.chainId)));
    read = { at, chainIds };
    ctx.detection.degradedChainsRead = read;
    // A failed read is not kept: the next poll asks again.
    chainIds.catch(() => {
      if (ctx.detection.degradedChainsRead?.chainIds === chainIds) ctx.detection.degradedChainsRead = null;
    });
  }
  return (await read.chainIds).has(chainId);
}
