import { and, eq, isNotNull, isNull, sql } from 'drizzle-orm';
import { chainCheckpoints, webhookEndpoints } from '../../db/schema';
import { isDatabaseError, type DbOrTx } from '../../db/client';
import { elapsedMs } from '../platform/clock';
import type { ServiceContext } from '../service/context';
import { emitEvent } from '../events/events';

/**
 * A stalled chain is visible (design.md §4b). After each scan attempt that reached the chain's
 * providers, and every few seconds from each worker process's own timer (workers/schedule-watch.ts,
 * so a watch never depends on the scan jobs it watches), the chain's stored state is checked
 * against CHAIN_STALL_ALERT_SECONDS:
 * - providers_failing: the providers are failing now (every one of the last attempt's), and have
 *   for that long or no head has been seen for that long (a hanging provider: the last head is
 *   older than the first failure, and is what crosses the threshold first);
 * - not_scanned: no scan run has completed for that long, whatever stopped them (no worker
 *   scanning the chain, its job schedules lost with Redis's keys, every run failing), unless a
 *   reason below says more (runs that see the head move but cannot store a range: checkpoint_stalled);
 * - head_stalled: the providers answer but the head has not advanced for that long (a halted chain
 *   or a provider stuck on an old block);
 * - checkpoint_stalled: the head is ahead but the checkpoint has not moved for that long.
 * A run that failed for the service's own reason (its database) is not judged at all
 * (core/detection/monitor.ts): state it could not store says nothing about the chain.
 * An episode begins once (stalled_since set under the row lock): an error log line and one
 * alert.chain_stalled per organization with an enabled endpoint subscribed to it. It ends with a
 * recovery log line. /health shows the chain as degraded meanwhile, still answering 200.
 */

export type StallReason = 'providers_failing' | 'not_scanned' | 'head_stalled' | 'checkpoint_stalled';

export async function noteProviderFailure(ctx: ServiceContext, chainId: string): Promise<void> {
  await ctx.db
    .update(chainCheckpoints)
    .set({ providersFailingSince: ctx.clock.now() })
    .where(and(eq(chainCheckpoints.chainId, chainId), isNull(chainCheckpoints.providersFailingSince)));
}

export async function noteProviderSuccess(ctx: ServiceContext, chainId: string): Promise<void> {
  await ctx.db
    .update(chainCheckpoints)
    .set({ providersFailingSince: null })
    .where(and(eq(chainCheckpoints.chainId, chainId), isNotNull(chainCheckpoints.providersFailingSince)));
}

type Row = typeof chainCheckpoints.$inferSelect;

type StallFacts = Pick<Row, 'blockNumber' | 'headNumber' | 'headSeenAt' | 'providersFailingSince' | 'scannedAt' | 'updatedAt'>;

/** Pure: why a chain is stalled at `now`, or null. */
export function stallReason(row: StallFacts, now: Date, thresholdMs: number): StallReason | null {
  const over = (since: Date | null) => since !== null && now.getTime() - since.getTime() >= thresholdMs;
  if (row.providersFailingSince !== null && (over(row.providersFailingSince) || over(row.headSeenAt))) return 'providers_failing';
  // Nothing completed and no new head seen: nobody looked (a head nobody asked about has not stalled).
  if (over(row.scannedAt) && over(row.headSeenAt)) return 'not_scanned';
  if (over(row.headSeenAt)) return 'head_stalled';
  if (row.headNumber !== null && row.headNumber > row.blockNumber && over(row.updatedAt)) return 'checkpoint_stalled';
  if (over(row.scannedAt)) return 'not_scanned';
  return null;
}

/** Starts or ends a chain's stall episode from its stored state. Returns the reason, or null when healthy. */
export async function checkChainStall(ctx: ServiceContext, chainId: string): Promise<StallReason | null> {
  const [peek] = await ctx.db.select().from(chainCheckpoints).where(eq(chainCheckpoints.chainId, chainId));
  if (!peek) return null;
  const now = ctx.clock.now();
  const reason = stallReason(peek, now, ctx.config.chainStallAlertMs);
  if ((reason !== null) === (peek.stalledSince !== null)) return reason;
  return ctx.db.transaction(async (tx) => {
    const [row] = await tx.select().from(chainCheckpoints).where(eq(chainCheckpoints.chainId, chainId)).for('update');
    const current = stallReason(row, now, ctx.config.chainStallAlertMs);
    if (current && !row.stalledSince) {
      const since = stallSince(row, current, now);
      await tx.update(chainCheckpoints).set({ stalledSince: since, stallReason: current }).where(eq(chainCheckpoints.chainId, chainId));
      const data = { chainId, reason: current, since: since.toISOString(), head: row.headNumber, checkpoint: row.blockNumber };
      ctx.logger.error(data, `chain ${chainId} is stalled (${current})`);
      for (const organizationId of await subscribedOrganizations(tx, 'alert.chain_stalled')) {
        await emitEvent(tx, { organizationId, type: 'alert.chain_stalled', createdAt: now, data });
      }
    } else if (!current && row.stalledSince) {
      await tx.update(chainCheckpoints).set({ stalledSince: null, stallReason: null }).where(eq(chainCheckpoints.chainId, chainId));
      ctx.logger.info({ chainId, since: row.stalledSince.toISOString(), reason: row.stallReason, checkpoint: row.blockNumber }, `chain ${chainId} recovered from its stall`);
    }
    return current;
  });
}

/** When a stall began: the providers' first failure, the last completed scan, the head's or the checkpoint's last move. */
export function stallSince(row: StallFacts, reason: StallReason, now: Date): Date {
  const since = { providers_failing: row.providersFailingSince, not_scanned: row.scannedAt, head_stalled: row.headSeenAt, checkpoint_stalled: row.updatedAt }[reason];
  return since ?? now;
}

/**
 * The stall watch's turn (workers/schedule-watch.ts, a timer of each worker process): every
 * enabled chain judged from its stored state, so a chain nobody scans any more is noticed too.
 * Not while this process's database has failed within the threshold: what could not be stored
 * says nothing about the chains (as after a scan run, monitor.ts).
 */
export async function watchChainStalls(ctx: ServiceContext): Promise<void> {
  const failedAt = ctx.detection.databaseFailedAt;
  if (failedAt !== null && elapsedMs() - failedAt < ctx.config.chainStallAlertMs) return;
  try {
    for (const chain of ctx.registry.list().filter((c) => c.enabled)) await checkChainStall(ctx, chain.chainId);
  } catch (err) {
    if (isDatabaseError(err)) ctx.detection.databaseFailedAt = elapsedMs();
    throw err;
  }
}

/** Organizations with an enabled webhook endpoint subscribed to an event type. */
export async function subscribedOrganizations(db: DbOrTx, type: string): Promise<string[]> {
  const rows = await db
    .selectDistinct({ organizationId: webhookEndpoints.organizationId })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.enabled, true), sql`${type} = any(${webhookEndpoints.events})`));
  return rows.map((r) => r.organizationId);
}

/** Every chain in a stall episode (/health). */
export async function stalledChains(db: DbOrTx): Promise<{ chainId: string; reason: string | null; since: Date; head: number | null; checkpoint: number }[]> {
  const rows = await db.select().from(chainCheckpoints).where(isNotNull(chainCheckpoints.stalledSince));
  return rows.map((r) => ({ chainId: r.chainId, reason: r.stallReason, since: r.stalledSince!, head: r.headNumber, checkpoint: r.blockNumber }));
}
