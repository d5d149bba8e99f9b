import { and, eq, isNull, lte, gt, or, desc, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { prepareStatement, type DbOrTx, type PreparedStatement, type Tx } from '../../db/client';
import { addressAssignments, poolAddresses } from '../../db/schema';
import { AppError } from '../errors';
import type { Protocol } from '../chains/registry';
import { cooldownMinutesFor, releaseCooledDownAddresses, type ReleaseReason } from './cooldown';

/**
 * Taking and giving back pool addresses (design.md §4). Both run inside the caller's transaction,
 * so an order or binding and its address assignment commit together or not at all.
 */

export type Holder = { kind: 'order'; orderId: string } | { kind: 'deposit'; depositBindingId: string };

export interface Allocation {
  poolAddressId: number;
  address: string;
  assignmentId: number;
}

/**
 * Takes the next available address of a protocol for an order (→ allocated) or a deposit
 * reference (→ bound), in the spec's order: never-used first by creation time, then recycled by
 * recycled_at. SKIP LOCKED lets concurrent requests take different addresses without waiting;
 * the partial unique index on open assignments forbids holding one twice.
 */
export async function allocatePoolAddress(
  tx: Tx,
  input: { organizationId: string; protocol: Protocol; holder: Holder; now: Date },
): Promise<Allocation> {
  return takeWithCooledDownRetry(tx, input, () => takeNextAvailable(tx, input));
}

/**
 * Runs `take` (a statement built on takeAddressCtes) and, when the pool had nothing for it, returns
 * this organization's addresses whose cooldown ended but that the cooldown job has not returned yet,
 * then tries once more rather than fail while the job lags. Still nothing: NO_AVAILABLE_ADDRESSES.
 */
export async function takeWithCooledDownRetry<T>(
  db: DbOrTx,
  scope: { organizationId: string; protocol: Protocol; now: Date },
  take: () => Promise<T | null>,
): Promise<T> {
  let taken = await take();
  if (!taken && (await releaseCooledDownAddresses(db, scope.now, { organizationId: scope.organizationId, protocol: scope.protocol })) > 0) {
    taken = await take();
  }
  if (!taken) {
    throw new AppError('NO_AVAILABLE_ADDRESSES', `No available ${scope.protocol} address in the pool; import more addresses`);
  }
  return taken;
}

/** A value of a statement: given, or a placeholder filled when a prepared statement runs. */
type Value<T> = T | Placeholder;

/**
 * The CTEs `candidate`, `taken` (id, address) and `assignment` (id, pool_address_id) that take the
 * first available address in allocation order, skipping rows other transactions hold, mark it taken
 * and open its assignment for the holder. The pick follows pool_addresses_allocation_idx exactly,
 * so it costs the same with a million addresses. Order creation builds on them, so the allocation
 * order is written once. `now` is an ISO timestamp.
 */
export function takeAddressCtes(input: {
  organizationId: Value<string>;
  protocol: Value<Protocol>;
  kind: Holder['kind'];
  holderId: Value<string>;
  now: Value<string>;
}): SQL {
  const status = input.kind === 'order' ? 'allocated' : 'bound';
  const orderId = input.kind === 'order' ? input.holderId : null;
  const depositBindingId = input.kind === 'deposit' ? input.holderId : null;
  return sql`
    candidate as (
      select id from pool_addresses
      where organization_id = ${input.organizationId} and protocol = ${input.protocol} and status = 'available'
      order by recycled_at asc nulls first, created_at asc, id asc
      limit 1
      for update skip locked
    ), taken as (
      update pool_addresses p
      set status = ${status}, cooldown_until = null, updated_at = ${input.now}::timestamptz
      from candidate c
      where p.id = c.id
      returning p.id, p.address
    ), assignment as (
      insert into address_assignments (pool_address_id, organization_id, kind, order_id, deposit_binding_id, started_at)
      select id, ${input.organizationId}, ${input.kind}, ${orderId}::text, ${depositBindingId}::text, ${input.now}::timestamptz from taken
      returning id, pool_address_id
    )`;
}

type TakeValues = { organizationId: string; protocol: Protocol; holderId: string; now: string };

/** takeAddressCtes alone, one prepared statement per holder kind (one round trip each time). */
const takeStatements = Object.fromEntries(
  (['order', 'deposit'] as const).map((kind) => [
    kind,
    prepareStatement<TakeValues>(sql`
      with ${takeAddressCtes({
        organizationId: sql.placeholder('organizationId'),
        protocol: sql.placeholder('protocol'),
        kind,
        holderId: sql.placeholder('holderId'),
        now: sql.placeholder('now'),
      })}
      select t.id as pool_address_id, t.address, a.id as assignment_id
      from taken t join assignment a on a.pool_address_id = t.id`),
  ]),
) as Record<Holder['kind'], PreparedStatement<TakeValues>>;

async function takeNextAvailable(
  tx: Tx,
  input: { organizationId: string; protocol: Protocol; holder: Holder; now: Date },
): Promise<Allocation | null> {
  const holderId = input.holder.kind === 'order' ? input.holder.orderId : input.holder.depositBindingId;
  const [row] = await takeStatements[input.holder.kind].run<{ pool_address_id: string | number; address: string; assignment_id: string | number }>(tx, {
    organizationId: input.organizationId,
    protocol: input.protocol,
    holderId,
    now: input.now.toISOString(),
  });
  if (!row) return null;
  return { poolAddressId: Number(row.pool_address_id), address: row.address, assignmentId: Number(row.assignment_id) };
}

/**
 * Ends the address's open assignment and starts its cooldown. Idempotent: an address with no
 * open assignment is left as it is.
 */
export async function releasePoolAddress(
  tx: Tx,
  input: { poolAddressId: number; now: Date; cooldownMinutes: number },
): Promise<boolean> {
  const ended = await tx
    .update(addressAssignments)
    .set({ endedAt: input.now })
    .where(and(eq(addressAssignments.poolAddressId, input.poolAddressId), isNull(addressAssignments.endedAt)))
    .returning({ id: addressAssignments.id });
  if (ended.length === 0) return false;
  const cooldownUntil = new Date(input.now.getTime() + input.cooldownMinutes * 60_000);
  await tx
    .update(poolAddresses)
    .set(
      input.cooldownMinutes > 0
        ? { status: 'cooldown', cooldownUntil, updatedAt: input.now }
        : // No cooldown configured: allocatable at once, as a recycled address.
          { status: 'available', cooldownUntil: null, recycledAt: input.now, updatedAt: input.now },
    )
    .where(eq(poolAddresses.id, input.poolAddressId));
  return true;
}

/**
 * Release with the organization's configured cooldown for the reason: `order` (completed or
 * expired order: address_pool.cooldown_minutes) or `unbind` (deposit reference unbound:
 * address_pool.unbind_cooldown_minutes).
 */
export async function releasePoolAddressFor(
  tx: Tx,
  input: { poolAddressId: number; organizationId: string; reason: ReleaseReason; now: Date },
): Promise<boolean> {
  const cooldownMinutes = await cooldownMinutesFor(tx, input.organizationId, input.reason);
  return releasePoolAddress(tx, { poolAddressId: input.poolAddressId, now: input.now, cooldownMinutes });
}

export interface AssignmentAt {
  assignmentId: number;
  kind: 'order' | 'deposit';
  orderId: string | null;
  depositBindingId: string | null;
  startedAt: Date;
  endedAt: Date | null;
}

/** The assignment that held an address at a moment (a transfer's block time), if any. */
export async function findAssignmentAt(db: DbOrTx, poolAddressId: number, at: Date): Promise<AssignmentAt | null> {
  const [row] = await db
    .select()
    .from(addressAssignments)
    .where(
      and(
        eq(addressAssignments.poolAddressId, poolAddressId),
        lte(addressAssignments.startedAt, at),
        or(isNull(addressAssignments.endedAt), gt(addressAssignments.endedAt, at)),
      ),
    )
    .orderBy(desc(addressAssignments.startedAt))
    .limit(1);
  if (!row) return null;
  return { assignmentId: row.id, kind: row.kind, orderId: row.orderId, depositBindingId: row.depositBindingId, startedAt: row.startedAt, endedAt: row.endedAt };
}
