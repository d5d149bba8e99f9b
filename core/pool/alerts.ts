import { and, eq, sql } from 'drizzle-orm';
import type { Database } from '../../db/client';
import { organizationConfig, poolAlertState } from '../../db/schema';
import { PROTOCOLS, type Protocol } from '../chains/registry';
import { emitEvent } from '../events/events';
import { configKeyDefinition } from '../organizations/org-config';

/**
 * Low-pool alert (spec event alert.address_pool_low). Per organization and protocol the threshold
 * is `address_pool.low_threshold.<protocol>`: a count or a percentage ("10%"). The event is emitted
 * once when available addresses fall below it, and again only after the pool has recovered (is no
 * longer below) and falls again. pool_alert_state remembers the raised state; it is read and
 * changed under a row lock in the transaction that emits, so several workers emit once.
 */

export interface Threshold {
  kind: 'count' | 'percentage';
  value: number;
}

export function parseThreshold(value: unknown): Threshold {
  if (typeof value === 'string' && value.endsWith('%')) return { kind: 'percentage', value: parseFloat(value) };
  return { kind: 'count', value: typeof value === 'number' ? value : Number(value) || 0 };
}

/** Below the threshold? A threshold of 0 never is. */
export function isLow(available: number, total: number, t: Threshold): boolean {
  if (t.value <= 0 || total === 0) return false;
  if (t.kind === 'count') return available < t.value;
  return (available * 100) / total < t.value;
}

const thresholdKey = (protocol: Protocol) => `address_pool.low_threshold.${protocol}`;

export interface PoolLevelOutcome {
  organizationId: string;
  protocol: Protocol;
  available: number;
  total: number;
  low: boolean;
  /** The alert event emitted by this call, if any. */
  eventId: string | null;
}

/**
 * Checks one organization's protocol and raises or clears its alert. One transaction: the state
 * row is created if missing, locked, then the counts are read under the lock.
 */
export async function checkPoolLevel(db: Database, organizationId: string, protocol: Protocol, now: Date): Promise<PoolLevelOutcome> {
  return db.transaction(async (tx) => {
    await tx.insert(poolAlertState).values({ organizationId, protocol, alerted: false, updatedAt: now }).onConflictDoNothing();
    const [state] = await tx
      .select()
      .from(poolAlertState)
      .where(and(eq(poolAlertState.organizationId, organizationId), eq(poolAlertState.protocol, protocol)))
      .for('update');
    const [counts] = await tx.execute<{ total: string; available: string }>(sql`
      select count(*) as total, count(*) filter (where status = 'available') as available
      from pool_addresses where organization_id = ${organizationId} and protocol = ${protocol}`);
    const total = Number(counts.total);
    const available = Number(counts.available);
    const [setting] = await tx
      .select({ value: organizationConfig.value })
      .from(organizationConfig)
      .where(and(eq(organizationConfig.organizationId, organizationId), eq(organizationConfig.key, thresholdKey(protocol))));
    const threshold = parseThreshold(setting ? setting.value : configKeyDefinition(thresholdKey(protocol)).default);
    const low = isLow(available, total, threshold);
    let eventId: string | null = null;
    if (low && !state.alerted) {
      const percentage = total === 0 ? 0 : Math.round((available * 10_000) / total) / 100;
      const event = await emitEvent(tx, {
        organizationId,
        type: 'alert.address_pool_low',
        createdAt: now,
        data: { protocol, available, total, percentage, threshold: threshold.value, thresholdType: threshold.kind },
      });
      eventId = event.id;
    }
    if (low !== state.alerted) {
      await tx
        .update(poolAlertState)
        .set({ alerted: low, updatedAt: now })
        .where(and(eq(poolAlertState.organizationId, organizationId), eq(poolAlertState.protocol, protocol)));
    }
    return { organizationId, protocol, available, total, low, eventId };
  });
}

/**
 * The pool-low-check job: every (organization, protocol) that has pool addresses or a raised
 * alert. Returns what each check found.
 */
export async function checkPoolLevels(db: Database, now: Date): Promise<PoolLevelOutcome[]> {
  const pairs = await db.execute<{ organization_id: string; protocol: string }>(sql`
    select distinct organization_id, protocol from pool_addresses
    union
    select organization_id, protocol from pool_alert_state where alerted`);
  const outcomes: PoolLevelOutcome[] = [];
  for (const p of pairs) {
    if (!PROTOCOLS.includes(p.protocol as Protocol)) continue;
    outcomes.push(await checkPoolLevel(db, p.organization_id, p.protocol as Protocol, now));
  }
  return outcomes;
}
