import { and, asc, eq, isNull, lte, gt, or, desc, sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client';
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
  let candidate = await nextAvailable(tx, input.organizationId, input.protocol);
  if (!candidate) {
    // Addresses whose cooldown ended but that the cooldown job has not returned yet are usable:
    // return this organization's due ones now rather than fail while the job lags.
    if ((await releaseCooledDownAddresses(tx, input.now, { organizationId: input.organizationId, protocol: input.protocol })) > 0) {
      candidate = await nextAvailable(tx, input.organizationId, input.protocol);
    }
  }
  if (!candidate) {
    throw new AppError('NO_AVAILABLE_ADDRESSES', `No available ${input.protocol} address in the pool; import more addresses`);
  }
  await tx
    .update(poolAddresses)
    .set({ status: input.holder.kind === 'order' ? 'allocated' : 'bound', cooldownUntil: null, updatedAt: input.now })
    .where(eq(poolAddresses.id, candidate.id));
  const [assignment] = await tx
    .insert(addressAssignments)
    .values({
      poolAddressId: candidate.id,
      organizationId: input.organizationId,
      kind: input.holder.kind,
      orderId: input.holder.kind === 'order' ? input.holder.orderId : null,
      depositBindingId: input.holder.kind === 'deposit' ? input.holder.depositBindingId : null,
      startedAt: input.now,
    })
    .returning({ id: addressAssignments.id });
  return { poolAddressId: candidate.id, address: candidate.address, assignmentId: assignment.id };
}

async function nextAvailable(tx: Tx, organizationId: string, protocol: Protocol) {
  const [candidate] = await tx
    .select({ id: poolAddresses.id, address: poolAddresses.address })
    .from(poolAddresses)
    .where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, protocol), eq(poolAddresses.status, 'available')))
    .orderBy(sql`${poolAddresses.recycledAt} asc nulls first`, asc(poolAddresses.createdAt), asc(poolAddresses.id))
    .limit(1)
    .for('update', { skipLocked: true });
  return candidate;
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
