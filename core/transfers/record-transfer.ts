import { and, eq, gt, inArray, isNull, lte, ne, or, sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client';
import { addressAssignments, deposits, orders, poolAddresses, transfers } from '../../db/schema';
import type { ServiceContext } from '../context';
import { dropDeposit, recordDeposit } from '../deposits/lifecycle';
import { newId } from '../ids';
import { recomputeOrder, transferCountsTowardOrder } from '../orders/order-state';
import { findAssignmentAt } from '../pool/allocation';
import { logMoney, tokenAmount } from '../money-log';
import type { Currency, Protocol } from '../chains/registry';

/**
 * Recording what the chain scanners see (design.md §4). Detection only records transfers and asks
 * the order / deposit domain for a recompute; it never decides an order's status itself.
 */

export interface WatchedAddress {
  poolAddressId: number;
  organizationId: string;
  address: string;
}

/**
 * Pool addresses of a protocol among a set of candidate addresses: one indexed query whatever the
 * pool size (unique index on (protocol, address)). EVM candidates are given checksummed; the
 * lower-case form is matched too, for addresses stored that way.
 */
export async function findWatchedAddresses(db: DbOrTx, protocol: Protocol, candidates: string[]): Promise<Map<string, WatchedAddress>> {
  const out = new Map<string, WatchedAddress>();
  if (candidates.length === 0) return out;
  const forms = protocol === 'evm' ? [...new Set(candidates.flatMap((a) => [a, a.toLowerCase()]))] : [...new Set(candidates)];
  const rows = await db
    .select({ id: poolAddresses.id, organizationId: poolAddresses.organizationId, address: poolAddresses.address })
    .from(poolAddresses)
    .where(and(eq(poolAddresses.protocol, protocol), sql`${poolAddresses.address} = ANY(${sql.param(forms)}::text[])`));
  for (const r of rows) {
    out.set(protocol === 'evm' ? r.address.toLowerCase() : r.address, { poolAddressId: r.id, organizationId: r.organizationId, address: r.address });
  }
  return out;
}

export interface ObservedTransfer {
  chainId: string;
  protocol: Protocol;
  currency: Currency;
  tokenAddress: string;
  amount: bigint;
  fromAddress: string;
  toAddress: string;
  txHash: string;
  logIndex: number;
  blockNumber: number;
  blockHash: string;
  blockTimestamp: Date;
}

export interface RecordedTransfer {
  transferId: string;
  /** False when this log was already recorded (a rescan): nothing else happened. */
  created: boolean;
  orderId: string | null;
  depositBindingId: string | null;
}

/**
 * Block timestamps have one-second resolution while assignments start at a millisecond: a payment
 * mined in the second an order was created carries a timestamp up to 999 ms before the assignment
 * began. The block's second is taken as a whole: first the assignment holding the address at the
 * end of that second, else at its start.
 */
async function assignmentForBlockTime(tx: Tx, poolAddressId: number, blockTimestamp: Date) {
  const endOfSecond = new Date(blockTimestamp.getTime() + 999);
  return (await findAssignmentAt(tx, poolAddressId, endOfSecond)) ?? (await findAssignmentAt(tx, poolAddressId, blockTimestamp));
}

/**
 * Records one token transfer into a pool address, attributed to the assignment that held the
 * address at the transfer's block time (or to nobody: kept, unattributed, visible). Idempotent on
 * (chain, tx, log index): a rescan inserts nothing and triggers nothing.
 */
export async function recordTransfer(tx: Tx, ctx: ServiceContext, observed: ObservedTransfer, watched: WatchedAddress | null): Promise<RecordedTransfer> {
  let orderId: string | null = null;
  let depositBindingId: string | null = null;
  let assignmentId: number | null = null;
  let counted = false;
  if (watched) {
    const assignment = await assignmentForBlockTime(tx, watched.poolAddressId, observed.blockTimestamp);
    if (assignment) {
      assignmentId = assignment.assignmentId;
      orderId = assignment.kind === 'order' ? assignment.orderId : null;
      depositBindingId = assignment.kind === 'deposit' ? assignment.depositBindingId : null;
    }
  }
  if (orderId) {
    const [order] = await tx.select().from(orders).where(eq(orders.id, orderId));
    counted = !!order && transferCountsTowardOrder(order, observed);
  }
  const id = newId('trf');
  const inserted = await tx
    .insert(transfers)
    .values({
      id,
      chainId: observed.chainId,
      protocol: observed.protocol,
      currency: observed.currency,
      tokenAddress: observed.tokenAddress,
      amount: observed.amount,
      fromAddress: observed.fromAddress,
      toAddress: watched?.address ?? observed.toAddress,
      txHash: observed.txHash,
      logIndex: observed.logIndex,
      blockNumber: observed.blockNumber,
      blockHash: observed.blockHash,
      blockTimestamp: observed.blockTimestamp,
      confirmations: 0,
      status: 'pending',
      organizationId: watched?.organizationId ?? null,
      poolAddressId: watched?.poolAddressId ?? null,
      assignmentId,
      orderId,
      depositBindingId,
      counted,
      detectedAt: ctx.clock.now(),
    })
    .onConflictDoNothing()
    .returning({ id: transfers.id });
  if (inserted.length === 0) {
    const [existing] = await tx
      .select({ id: transfers.id, orderId: transfers.orderId, depositBindingId: transfers.depositBindingId })
      .from(transfers)
      .where(
        and(
          eq(transfers.chainId, observed.chainId),
          eq(transfers.txHash, observed.txHash),
          eq(transfers.logIndex, observed.logIndex),
          ne(transfers.status, 'dropped'),
        ),
      );
    return { transferId: existing?.id ?? '', created: false, orderId: existing?.orderId ?? null, depositBindingId: existing?.depositBindingId ?? null };
  }
  logPaymentSeen(ctx, { ...observed, toAddress: watched?.address ?? observed.toAddress }, { transferId: id, organizationId: watched?.organizationId ?? null, orderId, depositBindingId, counted });
  if (depositBindingId) await recordDeposit(tx, ctx, id);
  if (orderId) await recomputeOrder(tx, ctx, orderId);
  return { transferId: id, created: true, orderId, depositBindingId };
}

/**
 * Records the matched transfers of one scanned range. Transfers into addresses that nobody held at
 * their block time (the bulk of a catch-up into a large pool) are inserted together, with one
 * query for the assignments of every address involved; attributed ones go through
 * recordTransfer one by one (they trigger the order / deposit domain). Returns how many rows were new.
 */
export async function recordTransfers(tx: Tx, ctx: ServiceContext, items: { observed: ObservedTransfer; watched: WatchedAddress }[]): Promise<number> {
  if (items.length === 0) return 0;
  const ids = [...new Set(items.map((i) => i.watched.poolAddressId))];
  const times = items.map((i) => i.observed.blockTimestamp.getTime());
  const from = new Date(Math.min(...times));
  const to = new Date(Math.max(...times) + 999);
  const spans = await tx
    .select({ poolAddressId: addressAssignments.poolAddressId, startedAt: addressAssignments.startedAt, endedAt: addressAssignments.endedAt })
    .from(addressAssignments)
    .where(
      and(
        sql`${addressAssignments.poolAddressId} = ANY(${sql.param(ids)}::bigint[])`,
        lte(addressAssignments.startedAt, to),
        or(isNull(addressAssignments.endedAt), gt(addressAssignments.endedAt, from)),
      ),
    );
  const heldAt = (poolAddressId: number, at: number) =>
    spans.some((a) => a.poolAddressId === poolAddressId && a.startedAt.getTime() <= at && (a.endedAt === null || a.endedAt.getTime() > at));
  let created = 0;
  const plain: (typeof transfers.$inferInsert)[] = [];
  for (const { observed, watched } of items) {
    const t = observed.blockTimestamp.getTime();
    if (heldAt(watched.poolAddressId, t + 999) || heldAt(watched.poolAddressId, t)) {
      if ((await recordTransfer(tx, ctx, observed, watched)).created) created++;
      continue;
    }
    plain.push({
      ...observed,
      id: newId('trf'),
      toAddress: watched.address,
      confirmations: 0,
      status: 'pending',
      organizationId: watched.organizationId,
      poolAddressId: watched.poolAddressId,
      counted: false,
      detectedAt: ctx.clock.now(),
    });
  }
  for (let i = 0; i < plain.length; i += 1000) {
    const batch = plain.slice(i, i + 1000);
    const inserted = await tx.insert(transfers).values(batch).onConflictDoNothing().returning({ id: transfers.id });
    created += inserted.length;
    const isNew = new Set(inserted.map((r) => r.id));
    for (const t of batch) {
      if (isNew.has(t.id!)) logPaymentSeen(ctx, t as ObservedTransfer, { transferId: t.id!, organizationId: t.organizationId ?? null, orderId: null, depositBindingId: null, counted: false });
    }
  }
  return created;
}

/** The "payment seen" line: every new transfer into a pool address, attributed or not. */
function logPaymentSeen(
  ctx: ServiceContext,
  t: Pick<ObservedTransfer, 'chainId' | 'currency' | 'amount' | 'txHash' | 'logIndex' | 'blockNumber' | 'toAddress' | 'fromAddress'>,
  ids: { transferId: string; organizationId: string | null; orderId: string | null; depositBindingId: string | null; counted: boolean },
): void {
  logMoney(ctx.logger, 'payment seen', {
    ...ids,
    attributed: !!(ids.orderId || ids.depositBindingId),
    chainId: t.chainId,
    currency: t.currency,
    amount: tokenAmount(ctx.registry, t.chainId, t.currency, t.amount),
    amountUnits: t.amount,
    to: t.toAddress,
    from: t.fromAddress,
    txHash: t.txHash,
    logIndex: t.logIndex,
    blockNumber: t.blockNumber,
  });
}

/**
 * Marks pending transfers of orphaned blocks `dropped` (never credited) and lets the order and
 * deposit domains recompute. A confirmed transfer is final and is never dropped.
 */
export async function dropTransfers(tx: Tx, ctx: ServiceContext, transferIds: string[]): Promise<number> {
  if (transferIds.length === 0) return 0;
  const dropped = await tx
    .update(transfers)
    .set({ status: 'dropped', droppedAt: ctx.clock.now(), credited: false })
    .where(and(inArray(transfers.id, transferIds), eq(transfers.status, 'pending')))
    .returning({
      id: transfers.id,
      orderId: transfers.orderId,
      depositBindingId: transfers.depositBindingId,
      organizationId: transfers.organizationId,
      chainId: transfers.chainId,
      txHash: transfers.txHash,
      blockNumber: transfers.blockNumber,
      currency: transfers.currency,
      amount: transfers.amount,
    });
  for (const t of dropped) {
    logMoney(ctx.logger, 'payment dropped', {
      transferId: t.id,
      organizationId: t.organizationId,
      orderId: t.orderId,
      depositBindingId: t.depositBindingId,
      chainId: t.chainId,
      currency: t.currency,
      amount: tokenAmount(ctx.registry, t.chainId, t.currency, t.amount),
      txHash: t.txHash,
      blockNumber: t.blockNumber,
      reason: 'its block left the chain (reorg)',
    });
  }
  for (const t of dropped) {
    if (t.depositBindingId) {
      const [deposit] = await tx.select({ id: deposits.id }).from(deposits).where(eq(deposits.transferId, t.id));
      if (deposit) await dropDeposit(tx, ctx, t.id);
    }
  }
  for (const orderId of new Set(dropped.map((t) => t.orderId).filter((o): o is string => !!o))) {
    await recomputeOrder(tx, ctx, orderId);
  }
  return dropped.length;
}
