import { and, eq, isNull, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { prepareStatement, type DbOrTx, type PreparedStatement, type Tx } from '../../db/client';
import { addressAssignments, poolAddresses } from '../../db/schema';
import { AppError } from '../platform/errors';
import type { Protocol } from '../chains/registry';
import { cooldownMinutesFor, releaseCooledDownAddresses, secondsUntilNextCooldownEnds, type ReleaseReason } from './cooldown';

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
    const retryAfter = await secondsUntilNextCooldownEnds(db, scope, scope.now);
    if (retryAfter === null) {
      // An empty pool never fills by waiting: no Retry-After, and what fills it.
      throw new AppError(
        'NO_AVAILABLE_ADDRESSES',
        `The organization's ${scope.protocol} address pool is empty: import addresses (POST /api/v1/address-pool/import) or derive them from an extended public key (POST /api/v1/address-pool/derive)`,
      );
    }
    throw new AppError('NO_AVAILABLE_ADDRESSES', `No available ${scope.protocol} address in the pool; import more addresses or retry after ${retryAfter} seconds`, undefined, { retryAfter });
  }
  return taken;
}

/** A value of a statement: given, or a placeholder filled when a prepared statement runs. */
type Value<T> = T | Placeholder;

/**
 * Where the allocation order stood after an address this process took: allocation looks from
 * there on instead of from the head of the pool. Timestamps are the database's own text (exact to
 * the microsecond). See AllocationHints.
 */
export type AllocationPoint = {
  neverUsedCreatedAt: string;
  neverUsedId: number;
  recycledAt: string;
  recycledCreatedAt: string;
  recycledId: number;
};

/** No hint: the whole pool in allocation order. */
export const POOL_HEAD: AllocationPoint = {
  neverUsedCreatedAt: '-infinity',
  neverUsedId: 0,
  recycledAt: '-infinity',
  recycledCreatedAt: '-infinity',
  recycledId: 0,
};

/**
 * The CTEs `never_used`, `recycled`, `taken` (id, address, pool_created_at, pool_recycled_at) and
 * `assignment` (id, pool_address_id) that take the first available address in allocation order
 * at or after `after`, skipping rows other transactions hold, mark it taken and open its
 * assignment for the holder. Never-used addresses come first by creation time; only when there is
 * none, recycled ones by recycled_at. Each pick is a range scan of pool_addresses_allocation_idx
 * that starts at `after`: taken addresses leave dead entries at the head of that index until
 * VACUUM, and a scan from the head steps over all of them (figures in scripts/bench/FINDINGS.md). Order creation builds on these CTEs, so the allocation order is written once.
 * `now` is an ISO timestamp.
 */
export function takeAddressCtes(input: {
  organizationId: Value<string>;
  protocol: Value<Protocol>;
  kind: Holder['kind'];
  holderId: Value<string>;
  now: Value<string>;
  after: { [K in keyof AllocationPoint]: Value<AllocationPoint[K]> };
}): SQL {
  const status = input.kind === 'order' ? 'allocated' : 'bound';
  const orderId = input.kind === 'order' ? input.holderId : null;
  const depositBindingId = input.kind === 'deposit' ? input.holderId : null;
  return sql`
    ${candidateCtes({ ...input, columns: 'id', count: 1 })}, taken as (
      update pool_addresses p
      set status = ${status}, cooldown_until = null, updated_at = ${input.now}::timestamptz
      from (select id from never_used union all select id from recycled) c
      where p.id = c.id
      returning p.id, p.address, p.created_at::text as pool_created_at, p.recycled_at::text as pool_recycled_at
    ), assignment as (
      insert into address_assignments (pool_address_id, organization_id, kind, order_id, deposit_binding_id, started_at, heads_seen)
      select id, ${input.organizationId}, ${input.kind}, ${orderId}::text, ${depositBindingId}::text, ${input.now}::timestamptz, ${HEADS_SEEN_SQL} from taken
      returning id, pool_address_id
    )`;
}

/** The spec's allocation order: never-used addresses first by creation time, then recycled ones by recycled_at. */
const ALLOCATION_ORDER = sql.raw('recycled_at asc nulls first, created_at asc, id asc');

/**
 * The allocation's candidates, written once for the lone and the batch statements: the CTEs
 * `never_used` and `recycled`, up to `count` available addresses each (recycled ones only when no
 * never-used one is left) at or after `after` in allocation order, rows other transactions hold
 * skipped. `columns` is their select list; `count` is written into the text (the planner knows
 * the limit).
 */
function candidateCtes(input: {
  organizationId: Value<string>;
  protocol: Value<Protocol>;
  after: { [K in keyof AllocationPoint]: Value<AllocationPoint[K]> };
  columns: 'id' | 'id, recycled_at, created_at';
  count: number;
}): SQL {
  const { after } = input;
  const columns = sql.raw(input.columns);
  const count = sql.raw(String(input.count));
  const available = sql`organization_id = ${input.organizationId} and protocol = ${input.protocol} and status = 'available'`;
  return sql`never_used as (
      select ${columns} from pool_addresses
      where ${available} and recycled_at is null
        and (created_at, id) >= (${after.neverUsedCreatedAt}::timestamptz, ${after.neverUsedId}::bigint)
      order by ${ALLOCATION_ORDER}
      limit ${count}
      for update skip locked
    ), recycled as (
      select ${columns} from pool_addresses
      where not exists (select from never_used) and ${available} and recycled_at is not null
        and (recycled_at, created_at, id) >= (${after.recycledAt}::timestamptz, ${after.recycledCreatedAt}::timestamptz, ${after.recycledId}::bigint)
      order by ${ALLOCATION_ORDER}
      limit ${count}
      for update skip locked
    )`;
}

/**
 * takeAddressCtes for `count` orders at once (order creation's group commit, core/orders/orders.ts):
 * `never_used`, `recycled`, `picked`, `taken` (id, address, pool_created_at, pool_recycled_at, n)
 * and `assignment` take up to `count` available addresses at or after `after` in allocation order,
 * skipping rows other transactions hold, mark them taken and open their assignments. `n` ranks
 * the taken addresses in allocation order from 1; `orders` is a relation of the holders (columns
 * `n`, `id`, `now`, one row per n from 1 to count), and the address of rank n goes to its order n.
 * Fewer than `count` available: the last orders get none (no row in `taken`). Recycled addresses
 * are taken only when no never-used one is left, as in takeAddressCtes: where the never-used run
 * out mid-batch, the batch takes those and its last orders get none (they then take alone, from
 * the recycled), so it never locks a row it does not take, which would hide it from a concurrent
 * creation looking at the last addresses of the pool.
 * `count` is written into the text, not bound: a statement per count, whose limit the planner
 * knows (with a bound limit the generic plan guesses a tenth of the pool and sorts it).
 */
export function takeAddressesForOrdersCtes(input: {
  organizationId: Value<string>;
  protocol: Value<Protocol>;
  count: number;
  orders: SQL;
  after: { [K in keyof AllocationPoint]: Value<AllocationPoint[K]> };
}): SQL {
  if (!Number.isInteger(input.count) || input.count < 2) throw new Error(`takeAddressesForOrdersCtes takes 2 or more addresses, not ${input.count}`);
  return sql`
    ${candidateCtes({ ...input, columns: 'id, recycled_at, created_at', count: input.count })}, picked as (
      select id, row_number() over (order by ${ALLOCATION_ORDER}) as n
      from (select * from never_used union all select * from recycled) c
    ), taken as (
      update pool_addresses p
      set status = 'allocated', cooldown_until = null, updated_at = o.now
      from picked c join ${input.orders} o on o.n = c.n
      where p.id = c.id
      returning p.id, p.address, p.created_at::text as pool_created_at, p.recycled_at::text as pool_recycled_at, c.n
    ), assignment as (
      insert into address_assignments (pool_address_id, organization_id, kind, order_id, deposit_binding_id, started_at, heads_seen)
      select t.id, ${input.organizationId}, 'order', o.id, null, o.now, ${HEADS_SEEN_SQL}
      from taken t join ${input.orders} o on o.n = t.n
      returning id, pool_address_id
    )`;
}

/**
 * The highest block of every chain the scanners had recorded, kept on a new assignment for
 * operators reading it. Attribution no longer reads it (core/detection/attribution.ts decides from
 * chain_head_observations, which say when each head was seen).
 */
export const HEADS_SEEN_SQL = sql.raw(
  `(select coalesce(jsonb_object_agg(chain_id, head_number), '{}'::jsonb) from chain_checkpoints where head_number is not null)`,
);

/** The allocation point as placeholders of a prepared statement (filled from an AllocationPoint). */
export const AFTER_PLACEHOLDERS = {
  neverUsedCreatedAt: sql.placeholder('neverUsedCreatedAt'),
  neverUsedId: sql.placeholder('neverUsedId'),
  recycledAt: sql.placeholder('recycledAt'),
  recycledCreatedAt: sql.placeholder('recycledCreatedAt'),
  recycledId: sql.placeholder('recycledId'),
};

/**
 * Per organization and protocol, the point after the last address this process took for an
 * order (only committed takes move it: order creation is one statement). Addresses before that
 * point are all taken, except one given back by a rolled-back allocation (an order whose reference
 * was a duplicate here or elsewhere, a deposit binding whose transaction failed) or imported with
 * an older creation time: such an address waits until the hint is dropped. It is dropped when a
 * creation in this process fails, when the pool looks empty from it (the statement then runs again
 * from the head, so an available address is never missed), and after HINT_LIFETIME_MS.
 * One instance per service context (ServiceContext.memory): contexts never share a point.
 */
export class AllocationHints {
  static readonly HINT_LIFETIME_MS = 5_000;
  private readonly points = new Map<string, { point: AllocationPoint; setAt: number }>();
  /** Bumped by every forget: a creation that began before one does not move the hint. */
  private readonly epochs = new Map<string, number>();

  /** `now` (milliseconds) times the hint's lifetime; a test may freeze it. */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /**
   * Runs `take` (a statement built on takeAddressCtes that commits on its own) from this process's
   * point, and from the head when nothing comes from the point, before the pool counts as empty.
   * A committed take moves the point; a failed one drops it (its address went back to the pool).
   */
  async take<Row>(
    scope: { organizationId: string; protocol: Protocol },
    take: (after: AllocationPoint) => Promise<Row | null>,
    takenOf: (row: Row) => { id: number; createdAt: string; recycledAt: string | null },
  ): Promise<Row | null> {
    const hint = this.current(scope.organizationId, scope.protocol);
    try {
      let row = await take(hint.point ?? POOL_HEAD);
      if (!row && hint.point) {
        this.forget(scope.organizationId, scope.protocol);
        row = await take(POOL_HEAD);
      }
      if (row) this.advance(scope.organizationId, scope.protocol, [takenOf(row)], hint);
      return row;
    } catch (err) {
      this.forget(scope.organizationId, scope.protocol);
      throw err;
    }
  }

  /**
   * Runs `take` (a statement built on takeAddressesForOrdersCtes that commits on its own) for
   * several creations from this process's point, never from the head: a creation it could not
   * serve takes alone afterwards (from the point, then from the head). Every committed take moves
   * the point; a failure drops it. `rows` come in allocation order.
   */
  async takeSeveral<Row>(
    scope: { organizationId: string; protocol: Protocol },
    take: (after: AllocationPoint) => Promise<Row[]>,
    takenOf: (row: Row) => { id: number; createdAt: string; recycledAt: string | null },
  ): Promise<Row[]> {
    const hint = this.current(scope.organizationId, scope.protocol);
    try {
      const rows = await take(hint.point ?? POOL_HEAD);
      if (rows.length > 0) this.advance(scope.organizationId, scope.protocol, rows.map(takenOf), hint);
      return rows;
    } catch (err) {
      this.forget(scope.organizationId, scope.protocol);
      throw err;
    }
  }

  /** The point to allocate from (null: the head), and the epoch to hand back to advance. */
  private current(organizationId: string, protocol: Protocol): AllocationHint {
    const key = `${organizationId}:${protocol}`;
    const epoch = this.epochs.get(key) ?? 0;
    const hint = this.points.get(key);
    if (hint && this.now() - hint.setAt > AllocationHints.HINT_LIFETIME_MS) {
      this.forget(organizationId, protocol);
      return { point: null, epoch: epoch + 1 };
    }
    return { point: hint?.point ?? null, epoch };
  }

  /** After committed takes (in allocation order) by a creation, or a batch of them, that began with `from`. */
  private advance(
    organizationId: string,
    protocol: Protocol,
    takes: { id: number; createdAt: string; recycledAt: string | null }[],
    from: AllocationHint,
  ): void {
    const key = `${organizationId}:${protocol}`;
    if ((this.epochs.get(key) ?? 0) !== from.epoch) return;
    let point: AllocationPoint = from.point ?? POOL_HEAD;
    for (const taken of takes) {
      point =
        taken.recycledAt === null
          ? { ...point, neverUsedCreatedAt: taken.createdAt, neverUsedId: taken.id }
          : // The never-used point stays: addresses imported meanwhile come before any recycled one.
            { ...point, recycledAt: taken.recycledAt, recycledCreatedAt: taken.createdAt, recycledId: taken.id };
    }
    // Concurrent creations finish in any order, so the point may step back a little: still before
    // every available address. The time it was first set stays: dropped every HINT_LIFETIME_MS.
    this.points.set(key, { point, setAt: this.points.get(key)?.setAt ?? this.now() });
  }

  private forget(organizationId: string, protocol: Protocol): void {
    const key = `${organizationId}:${protocol}`;
    this.points.delete(key);
    this.epochs.set(key, (this.epochs.get(key) ?? 0) + 1);
  }
}

export interface AllocationHint {
  point: AllocationPoint | null;
  epoch: number;
}

type TakeValues = { organizationId: string; protocol: Protocol; holderId: string; now: string } & AllocationPoint;

/**
 * takeAddressCtes alone, one prepared statement per holder kind (one round trip each time), for
 * allocations inside a caller's transaction (deposit bindings). Hand-written for the same reasons
 * as order creation's statement, which shares these CTEs (core/orders/orders.ts).
 */
const takeStatements = Object.fromEntries(
  (['order', 'deposit'] as const).map((kind) => [
    kind,
    prepareStatement<TakeValues>(`pool.take_for_${kind}`, sql`
      with ${takeAddressCtes({
        organizationId: sql.placeholder('organizationId'),
        protocol: sql.placeholder('protocol'),
        kind,
        holderId: sql.placeholder('holderId'),
        now: sql.placeholder('now'),
        after: AFTER_PLACEHOLDERS,
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
    // Inside a caller's transaction: whether it commits is not known here, so no hint either way.
    ...POOL_HEAD,
  });
  if (!row) return null;
  return { poolAddressId: Number(row.pool_address_id), address: row.address, assignmentId: Number(row.assignment_id) };
}

/**
 * Ends the address's open assignment and starts its cooldown: the configured minutes, never less
 * than `minimumCooldownSeconds` (the effective minimum S of the address's chains,
 * ChainRegistry.minimumCooldownSeconds): two holders of an address are always at least S apart,
 * which keeps every hand-over decidable by attribution (core/detection/attribution.ts). Idempotent:
 * an address with no open assignment is left as it is.
 */
export async function releasePoolAddress(
  tx: Tx,
  input: { poolAddressId: number; now: Date; cooldownMinutes: number; minimumCooldownSeconds?: number },
): Promise<boolean> {
  const ended = await tx
    .update(addressAssignments)
    .set({ endedAt: input.now })
    .where(and(eq(addressAssignments.poolAddressId, input.poolAddressId), isNull(addressAssignments.endedAt)))
    .returning({ id: addressAssignments.id });
  if (ended.length === 0) return false;
  const cooldownMs = Math.max(input.cooldownMinutes * 60_000, (input.minimumCooldownSeconds ?? 0) * 1000);
  const cooldownUntil = new Date(input.now.getTime() + cooldownMs);
  await tx
    .update(poolAddresses)
    .set(
      cooldownMs > 0
        ? { status: 'cooldown', cooldownUntil, updatedAt: input.now }
        : // No cooldown at all: allocatable at once, as a recycled address.
          { status: 'available', cooldownUntil: null, recycledAt: input.now, updatedAt: input.now },
    )
    .where(eq(poolAddresses.id, input.poolAddressId));
  return true;
}

/**
 * Release with the organization's configured cooldown for the reason: `order` (completed or
 * expired order: address_pool.cooldown_minutes) or `unbind` (deposit reference unbound:
 * address_pool.unbind_cooldown_minutes), raised to `minimumCooldownSeconds` (S) when below it.
 */
export async function releasePoolAddressFor(
  tx: Tx,
  input: { poolAddressId: number; organizationId: string; reason: ReleaseReason; now: Date; minimumCooldownSeconds: number },
): Promise<boolean> {
  const cooldownMinutes = await cooldownMinutesFor(tx, input.organizationId, input.reason);
  return releasePoolAddress(tx, { poolAddressId: input.poolAddressId, now: input.now, cooldownMinutes, minimumCooldownSeconds: input.minimumCooldownSeconds });
}
