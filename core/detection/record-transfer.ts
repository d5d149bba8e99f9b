import { and, desc, eq, inArray, ne, sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client';
import { deposits, orders, poolAddresses, transfers } from '../../db/schema';
import { normalizeAddress } from '../chains/addresses';
import type { ServiceContext } from '../service/context';
import { dropDeposit, recordDeposit } from '../deposits/lifecycle';
import { newId } from '../platform/ids';
import { followMovedTransfer, recomputeOrder, transferCountsTowardOrder } from '../orders/order-state';
import type { Protocol } from '../chains/registry';
import type { ChainTransfer } from './adapter';
import { logMoney, tokenAmount } from '../platform/money-log';
import { assignmentsAround, attributeTransfer, type AssignmentSpan } from './attribution';

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
 * pool size (unique index on (protocol, address)). Candidates and stored addresses are compared in
 * the one normalised form (normalizeAddress), which the map is keyed by; invalid candidates match
 * nothing.
 */
export async function findWatchedAddresses(db: DbOrTx, protocol: Protocol, candidates: string[]): Promise<Map<string, WatchedAddress>> {
  const out = new Map<string, WatchedAddress>();
  if (candidates.length === 0) return out;
  const forms = [...new Set(candidates.map((a) => normalizeAddress(protocol, a)).filter((a): a is string => a !== null))];
  if (forms.length === 0) return out;
  const rows = await db
    .select({ id: poolAddresses.id, organizationId: poolAddresses.organizationId, address: poolAddresses.address })
    .from(poolAddresses)
    .where(and(eq(poolAddresses.protocol, protocol), sql`${poolAddresses.address} = ANY(${sql.param(forms)}::text[])`));
  for (const r of rows) out.set(r.address, { poolAddressId: r.id, organizationId: r.organizationId, address: r.address });
  return out;
}

export interface ObservedItem {
  observed: ChainTransfer;
  protocol: Protocol;
  watched: WatchedAddress;
}

/**
 * Records the matched transfers of one scanned range, inside the scan's transaction. Returns how
 * many rows were new.
 * - A transfer already recorded — same identity (chain, tx hash, index in tx), or same block hash
 *   and block log index (rows backfilled by the identity migration) — is not recorded again. If its
 *   block changed (the transaction was re-mined after a reorg) the row moves to the new block and a
 *   `reorged` transfer is `confirmed` again; its attribution and credit stay as they were.
 * - New transfers are attributed (core/detection/attribution.ts, one query for every address of
 *   the range). Unattributed ones (the bulk of a catch-up into a large pool) are inserted together;
 *   attributed ones one by one, since they trigger the order / deposit domain.
 */
export async function recordTransfers(tx: Tx, ctx: ServiceContext, items: ObservedItem[]): Promise<number> {
  if (items.length === 0) return 0;
  const chainId = items[0].observed.chainId;
  const chain = ctx.registry.get(chainId);
  if (!chain) throw new Error(`recordTransfers: unknown chain ${chainId}`);
  const fresh = await moveKnownTransfers(tx, ctx, chainId, items);
  if (fresh.length === 0) return 0;

  const times = fresh.map((i) => i.observed.blockTimestamp * 1000);
  const spans = await assignmentsAround(
    tx,
    [...new Set(fresh.map((i) => i.watched.poolAddressId))],
    new Date(Math.min(...times)),
    new Date(Math.max(...times)),
    chain.attributionSkewSeconds,
  );
  const remined = await attributionsOfDropped(tx, chainId, fresh);
  let created = 0;
  const plain: (typeof transfers.$inferInsert)[] = [];
  for (const item of fresh) {
    const o = item.observed;
    const assignment =
      remined.get(identityOf(item)) ??
      attributeTransfer(
        spans,
        { poolAddressId: item.watched.poolAddressId, chainId, blockNumber: o.blockNumber, blockTime: new Date(o.blockTimestamp * 1000) },
        chain.attributionSkewSeconds,
      );
    if (assignment) {
      if (await recordAttributed(tx, ctx, item, assignment)) created++;
      continue;
    }
    plain.push(transferRow(ctx, item, null, false));
  }
  for (let i = 0; i < plain.length; i += 1000) {
    const batch = plain.slice(i, i + 1000);
    const inserted = await tx.insert(transfers).values(batch).onConflictDoNothing().returning({ id: transfers.id });
    created += inserted.length;
    const isNew = new Set(inserted.map((r) => r.id));
    for (const row of batch) if (isNew.has(row.id!)) logPaymentSeen(ctx, row);
  }
  return created;
}

/** What a transfer row keeps of the assignment it is attributed to. */
type Attribution = Pick<AssignmentSpan, 'assignmentId' | 'kind' | 'orderId' | 'depositBindingId'>;

const identityOf = (item: ObservedItem): string => `${item.observed.txHash}|${item.observed.indexInTx}`;

/**
 * A re-mined transaction is the same transfer (design.md §4b): when its earlier copy was dropped
 * (its block orphaned while it was pending), the new copy keeps that copy's attribution instead of
 * deciding it again from the new block. Deciding again could lose it: the new block may sit at a
 * height the service had already seen when the assignment began (the clock-skew rule then refuses
 * it), and the payment would stay unattributed, never credited.
 */
async function attributionsOfDropped(tx: Tx, chainId: string, items: ObservedItem[]): Promise<Map<string, Attribution>> {
  const out = new Map<string, Attribution>();
  if (items.length === 0) return out;
  const rows = await tx
    .select({
      txHash: transfers.txHash,
      indexInTx: transfers.indexInTx,
      poolAddressId: transfers.poolAddressId,
      assignmentId: transfers.assignmentId,
      orderId: transfers.orderId,
      depositBindingId: transfers.depositBindingId,
    })
    .from(transfers)
    .where(
      and(
        eq(transfers.chainId, chainId),
        eq(transfers.status, 'dropped'),
        sql`${transfers.assignmentId} is not null`,
        sql`${transfers.txHash} = ANY(${sql.param([...new Set(items.map((i) => i.observed.txHash))])}::text[])`,
      ),
    )
    .orderBy(desc(transfers.detectedAt));
  const byIdentity = new Map<string, (typeof rows)[number]>();
  for (const r of rows) if (!byIdentity.has(`${r.txHash}|${r.indexInTx}`)) byIdentity.set(`${r.txHash}|${r.indexInTx}`, r);
  for (const item of items) {
    const r = byIdentity.get(identityOf(item));
    if (!r || r.poolAddressId !== item.watched.poolAddressId) continue;
    const kind = r.orderId ? 'order' : r.depositBindingId ? 'deposit' : null;
    if (kind) out.set(identityOf(item), { assignmentId: r.assignmentId!, kind, orderId: r.orderId, depositBindingId: r.depositBindingId });
  }
  return out;
}

function transferRow(ctx: ServiceContext, item: ObservedItem, assignment: Attribution | null, counted: boolean): typeof transfers.$inferInsert {
  const o = item.observed;
  return {
    id: newId('trf'),
    chainId: o.chainId,
    protocol: item.protocol,
    currency: o.currency,
    tokenAddress: o.tokenAddress,
    amount: o.amount,
    fromAddress: o.fromAddress,
    toAddress: item.watched.address,
    txHash: o.txHash,
    indexInTx: o.indexInTx,
    logIndex: o.blockLogIndex,
    blockNumber: o.blockNumber,
    blockHash: o.blockHash,
    blockTimestamp: new Date(o.blockTimestamp * 1000),
    confirmations: 0,
    status: 'pending',
    organizationId: item.watched.organizationId,
    poolAddressId: item.watched.poolAddressId,
    assignmentId: assignment?.assignmentId ?? null,
    orderId: assignment?.kind === 'order' ? assignment.orderId : null,
    depositBindingId: assignment?.kind === 'deposit' ? assignment.depositBindingId : null,
    counted,
    detectedAt: ctx.clock.now(),
  };
}

/** Inserts one attributed transfer and lets its order or deposit react. False when it already existed. */
async function recordAttributed(tx: Tx, ctx: ServiceContext, item: ObservedItem, assignment: Attribution): Promise<boolean> {
  const o = item.observed;
  let counted = false;
  if (assignment.kind === 'order' && assignment.orderId) {
    const [order] = await tx.select().from(orders).where(eq(orders.id, assignment.orderId));
    counted = !!order && transferCountsTowardOrder(order, { chainId: o.chainId, currency: o.currency, blockTimestamp: new Date(o.blockTimestamp * 1000) });
  }
  const row = transferRow(ctx, item, assignment, counted);
  const inserted = await tx.insert(transfers).values(row).onConflictDoNothing().returning({ id: transfers.id });
  if (inserted.length === 0) return false;
  logPaymentSeen(ctx, row);
  if (row.depositBindingId) await recordDeposit(tx, ctx, row.id!);
  if (row.orderId) await recomputeOrder(tx, ctx, row.orderId);
  return true;
}

/**
 * Splits off the items already recorded; those whose block changed move to it (and a `reorged`
 * one is confirmed again). One query for the range's transactions.
 */
async function moveKnownTransfers(tx: Tx, ctx: ServiceContext, chainId: string, items: ObservedItem[]): Promise<ObservedItem[]> {
  const hashes = [...new Set(items.map((i) => i.observed.txHash))];
  const known = await tx
    .select({
      id: transfers.id,
      txHash: transfers.txHash,
      indexInTx: transfers.indexInTx,
      logIndex: transfers.logIndex,
      blockHash: transfers.blockHash,
      status: transfers.status,
      orderId: transfers.orderId,
    })
    .from(transfers)
    .where(and(eq(transfers.chainId, chainId), sql`${transfers.txHash} = ANY(${sql.param(hashes)}::text[])`, ne(transfers.status, 'dropped')));
  if (known.length === 0) return items;
  const byIdentity = new Map(known.map((k) => [`${k.txHash}|${k.indexInTx}`, k]));
  const byPosition = new Map(known.map((k) => [`${k.blockHash}|${k.logIndex}`, k]));
  const fresh: ObservedItem[] = [];
  for (const item of items) {
    const o = item.observed;
    const existing = byIdentity.get(`${o.txHash}|${o.indexInTx}`) ?? byPosition.get(`${o.blockHash}|${o.blockLogIndex}`);
    if (!existing) {
      fresh.push(item);
      continue;
    }
    if (existing.blockHash === o.blockHash && existing.status !== 'reorged') continue;
    // Re-mined: the same transfer in another block. Never recorded anew; a deep-reorged credit is confirmed again.
    await tx
      .update(transfers)
      .set({
        blockNumber: o.blockNumber,
        blockHash: o.blockHash,
        blockTimestamp: new Date(o.blockTimestamp * 1000),
        logIndex: o.blockLogIndex,
        status: existing.status === 'reorged' ? 'confirmed' : existing.status,
      })
      .where(eq(transfers.id, existing.id));
    ctx.logger.warn(
      { chainId, transferId: existing.id, txHash: o.txHash, block: o.blockNumber, previousStatus: existing.status },
      'a recorded transfer was re-mined in another block: moved to it',
    );
    if (existing.orderId) {
      await followMovedTransfer(tx, ctx, existing.orderId, { txHash: o.txHash, blockNumber: o.blockNumber });
      await recomputeOrder(tx, ctx, existing.orderId);
    }
  }
  return fresh;
}

/** The "payment seen" line: every new transfer into a pool address, attributed or not. */
function logPaymentSeen(ctx: ServiceContext, t: typeof transfers.$inferInsert): void {
  logMoney(ctx.logger, 'payment seen', {
    transferId: t.id,
    organizationId: t.organizationId,
    orderId: t.orderId,
    depositBindingId: t.depositBindingId,
    attributed: !!(t.orderId || t.depositBindingId),
    counted: t.counted,
    chainId: t.chainId,
    currency: t.currency,
    amount: tokenAmount(ctx.registry, t.chainId, t.currency, t.amount as bigint),
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
    // Only pending transfers are dropped, and a pending one was never credited: `credited` stays the
    // order's and the deposit's to write.
    .set({ status: 'dropped', droppedAt: ctx.clock.now() })
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
