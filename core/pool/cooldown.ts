import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import type { Protocol } from '../chains/registry';
import { getConfigValue } from '../organizations/org-config';

/**
 * Cooldown: a released address waits before it can be handed out again, so a late payment to it
 * is not mistaken for the next holder's. Every release uses the spec's `address_pool.cooldown_minutes`;
 * unbinding a deposit reference uses `address_pool.unbind_cooldown_minutes` instead when the
 * organization set it (payers keep "permanent" addresses and may pay to them long after, so a
 * longer value is safer there).
 */
export type ReleaseReason = 'order' | 'unbind';

const COOLDOWN_KEY = 'address_pool.cooldown_minutes';
const UNBIND_OVERRIDE_KEY = 'address_pool.unbind_cooldown_minutes';

/** The organization's cooldown, in minutes, for an address released for `reason`. */
export async function cooldownMinutesFor(db: DbOrTx, organizationId: string, reason: ReleaseReason): Promise<number> {
  if (reason === 'unbind') {
    const override = await getConfigValue<number | null>(db, organizationId, UNBIND_OVERRIDE_KEY);
    if (typeof override === 'number' && override >= 0) return override;
  }
  const value = await getConfigValue<number>(db, organizationId, COOLDOWN_KEY);
  return typeof value === 'number' && value >= 0 ? value : 30;
}

/** Retry-After of NO_AVAILABLE_ADDRESSES: seconds until the next cooldown ends, at most this. */
export const MAX_RETRY_AFTER_SECONDS = 300;
/** Retry-After when addresses of the protocol are all held but none is cooling down (an order may finish). */
export const UNKNOWN_RETRY_AFTER_SECONDS = 60;

/**
 * When to retry after NO_AVAILABLE_ADDRESSES: seconds until the organization's next address of the
 * protocol leaves cooldown (at least 1, capped at MAX_RETRY_AFTER_SECONDS), UNKNOWN_RETRY_AFTER_SECONDS
 * when its addresses are all held but none cools down, and null when it has none of the protocol
 * at all (`total` 0): retrying can never help, only importing or deriving addresses.
 */
export async function secondsUntilNextCooldownEnds(db: DbOrTx, scope: { organizationId: string; protocol: Protocol }, now: Date): Promise<number | null> {
  const [row] = await db.execute<{ next: string | Date | null; total: number }>(sql`
    select min(cooldown_until) filter (where status = 'cooldown') as next, count(*)::int as total from pool_addresses
     where organization_id = ${scope.organizationId} and protocol = ${scope.protocol}`);
  if (!row || Number(row.total) === 0) return null;
  if (!row.next) return UNKNOWN_RETRY_AFTER_SECONDS;
  const seconds = Math.ceil((new Date(row.next).getTime() - now.getTime()) / 1000);
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, seconds));
}

const RELEASE_BATCH = 5000;

/**
 * Returns every address whose cooldown has ended to `available` and sets recycled_at (to the
 * moment the cooldown ended, so allocation order does not depend on when this job ran). Runs in
 * batches with SKIP LOCKED: safe with several workers and beside allocations. Returns the count.
 * `scope` limits it to one organization and protocol (allocation uses that when it finds none).
 */
export async function releaseCooledDownAddresses(
  db: DbOrTx,
  now: Date,
  scope?: { organizationId: string; protocol: Protocol },
): Promise<number> {
  const scopeSql = scope ? sql`and organization_id = ${scope.organizationId} and protocol = ${scope.protocol}` : sql``;
  const at = now.toISOString();
  let total = 0;
  for (;;) {
    const rows = await db.execute<{ id: number }>(sql`
      update pool_addresses p
      set status = 'available', recycled_at = p.cooldown_until, cooldown_until = null, updated_at = ${at}::timestamptz
      where p.id in (
        select id from pool_addresses
        where status = 'cooldown' and cooldown_until <= ${at}::timestamptz ${scopeSql}
        order by cooldown_until
        limit ${RELEASE_BATCH}
        for update skip locked)
      and p.status = 'cooldown'
      returning p.id`);
    total += rows.length;
    if (rows.length < RELEASE_BATCH) return total;
  }
}
