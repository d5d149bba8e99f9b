import { and, asc, count, desc, eq, isNull, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { addressAssignments, poolAddresses } from '../../db/schema';
import { PROTOCOLS, type Protocol } from '../chains/registry';
import { paginate } from '../platform/sql-fragments';

/** Read side of the pool: status counts and the address list, always of one organization. */

export type PoolAddressStatus = 'available' | 'allocated' | 'bound' | 'cooldown';
export const POOL_ADDRESS_STATUSES: readonly PoolAddressStatus[] = ['available', 'allocated', 'bound', 'cooldown'];

export interface ProtocolCounts {
  total: number;
  available: number;
  allocated: number;
  bound: number;
  coolingDown: number;
}

/** Spec "Pool status per protocol", for every protocol family (zeros where none). */
export async function poolStatus(db: DbOrTx, organizationId: string): Promise<Record<Protocol, ProtocolCounts>> {
  const rows = await db
    .select({ protocol: poolAddresses.protocol, status: poolAddresses.status, n: count() })
    .from(poolAddresses)
    .where(eq(poolAddresses.organizationId, organizationId))
    .groupBy(poolAddresses.protocol, poolAddresses.status);
  const out = Object.fromEntries(
    PROTOCOLS.map((p) => [p, { total: 0, available: 0, allocated: 0, bound: 0, coolingDown: 0 }]),
  ) as Record<Protocol, ProtocolCounts>;
  for (const r of rows) {
    const c = out[r.protocol as Protocol];
    if (!c) continue;
    const n = Number(r.n);
    c.total += n;
    if (r.status === 'cooldown') c.coolingDown += n;
    else c[r.status] += n;
  }
  return out;
}

export interface PoolAddressView {
  id: number;
  address: string;
  protocol: Protocol;
  status: PoolAddressStatus;
  mode: string;
  derivationIndex: number | null;
  masterPublicKey: string | null;
  cooldownUntil: Date | null;
  recycledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** The current holder (an order or a deposit reference binding), when allocated or bound. */
  heldBy: { kind: 'order'; orderId: string } | { kind: 'deposit'; depositBindingId: string } | null;
}

export const POOL_ADDRESS_SORT = ['createdAt', 'updatedAt', 'recycledAt', 'address'] as const;
export type PoolAddressSort = (typeof POOL_ADDRESS_SORT)[number];

export interface PoolAddressQuery {
  page: number;
  limit: number;
  sortBy: PoolAddressSort;
  sortOrder: 'asc' | 'desc';
  protocol?: Protocol;
  status?: PoolAddressStatus;
}

const SORT_COLUMNS = {
  createdAt: poolAddresses.createdAt,
  updatedAt: poolAddresses.updatedAt,
  recycledAt: poolAddresses.recycledAt,
  address: poolAddresses.address,
} as const;

export async function listPoolAddresses(db: DbOrTx, organizationId: string, q: PoolAddressQuery): Promise<{ items: PoolAddressView[]; total: number }> {
  const filters: SQL[] = [eq(poolAddresses.organizationId, organizationId)];
  if (q.protocol) filters.push(eq(poolAddresses.protocol, q.protocol));
  if (q.status) filters.push(eq(poolAddresses.status, q.status));
  const where = and(...filters);
  const dir = q.sortOrder === 'asc' ? asc : desc;
  const column = SORT_COLUMNS[q.sortBy];
  const [rows, [{ n }]] = await Promise.all([
    paginate(
      db
        .select({ p: poolAddresses, a: { kind: addressAssignments.kind, orderId: addressAssignments.orderId, depositBindingId: addressAssignments.depositBindingId } })
        .from(poolAddresses)
        .leftJoin(addressAssignments, and(eq(addressAssignments.poolAddressId, poolAddresses.id), isNull(addressAssignments.endedAt)))
        .where(where)
        .orderBy(q.sortBy === 'recycledAt' ? sql`${column} ${sql.raw(q.sortOrder)} nulls last` : dir(column), dir(poolAddresses.id))
        .$dynamic(),
      q,
    ),
    db.select({ n: count() }).from(poolAddresses).where(where),
  ]);
  const items = rows.map(({ p, a }) => ({
    id: p.id,
    address: p.address,
    protocol: p.protocol,
    status: p.status,
    mode: p.mode,
    derivationIndex: p.derivationIndex,
    masterPublicKey: p.masterPublicKey,
    cooldownUntil: p.cooldownUntil,
    recycledAt: p.recycledAt,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
    heldBy:
      a && a.kind === 'order' && a.orderId
        ? { kind: 'order' as const, orderId: a.orderId }
        : a && a.kind === 'deposit' && a.depositBindingId
          ? { kind: 'deposit' as const, depositBindingId: a.depositBindingId }
          : null,
  }));
  return { items, total: Number(n) };
}

/**
 * Available addresses of one organization's protocol, counted up to `cap` only (a guard that needs
 * to know "more than n free?" reads at most n + 1 index entries, whatever the pool's size).
 */
export async function countAvailableUpTo(db: DbOrTx, organizationId: string, protocol: Protocol, cap: number): Promise<number> {
  const [row] = await db.execute<{ n: number }>(sql`
    select count(*)::int as n from (
      select 1 from ${poolAddresses}
      where ${poolAddresses.organizationId} = ${organizationId} and ${poolAddresses.protocol} = ${protocol} and ${poolAddresses.status} = 'available'
      limit ${cap}) capped`);
  return Number(row.n);
}

/** Every address of one organization's protocol, whatever its status. */
export async function countPoolAddresses(db: DbOrTx, organizationId: string, protocol: Protocol): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(poolAddresses)
    .where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, protocol)));
  return Number(row.n);
}
