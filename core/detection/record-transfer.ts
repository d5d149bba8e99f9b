import { and, desc, eq, inArray, ne, sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client';
import { depositBindings, deposits, orders, poolAddresses, transfers, type StoredTransferCandidate } from '../../db/schema';
import { normalizeAddress } from '../chains/addresses';
import type { ServiceContext } from '../service/context';
import { dropDeposit, recordDeposit, restorePendingDeposit } from '../deposits/lifecycle';
import { newId } from '../platform/ids';
import { followMovedTransfer, recomputeOrder, routeOfTransfer, transferCountsTowardOrder } from '../orders/order-state';
import type { Protocol } from '../chains/registry';
import type { ChainTransfer } from '../chains/adapter-contract';
import { logMoney, tokenAmount } from '../platform/money-log';
import {
  assignmentsAround,
  attributeTransfer,
  CANDIDATE_NEXT_WINDOW_MS,
  CANDIDATE_PREVIOUS_WINDOW_MS,
  minedAfterTime,
  unattributedCandidates,
  type AssignmentSpan,
  type UnattributedReason,
} from './attribution';
import { emitEvents } from '../events/events';
import { transferUnattributedEventData } from '../views/transfer';
import { miningEvidence, type ClockWindow, type MiningEvidence } from './head-observations';
import { clockWindows, usableClock } from './clock-witness';
import { candidateOrderIds, forgetUnattributedPayment, noteLatePayment, noteUnattributedPayments } from '../orders/exceptions';
import { recomputeRefund, type WatchedDestination } from '../refunds/refund-settlement';
import type { Chain } from '../chains/registry';

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
 *   block changed (the transaction was re-mined after a reorg) the row moves to the new block: a
 *   `reorged` transfer is `confirmed` again, a `dropped` one `pending` again (its deposit too);
 *   its attribution, evidence and credit stay as they were (design.md §4b: one row per transfer).
 * - New transfers are attributed (core/detection/attribution.ts) on the evidence of when their
 *   block was mined (head-observations.ts), one query for every address of the range.
 *   Unattributed ones (the bulk of a catch-up into a large pool) are inserted together with their
 *   reason; attributed ones one by one, since they trigger the order / deposit domain.
 */
export async function recordTransfers(tx: Tx, ctx: ServiceContext, items: ObservedItem[]): Promise<number> {
  if (items.length === 0) return 0;
  const chainId = items[0].observed.chainId;
  const chain = ctx.registry.get(chainId);
  if (!chain) throw new Error(`recordTransfers: unknown chain ${chainId}`);
  const fresh = await moveKnownTransfers(tx, ctx, chainId, items);
  if (fresh.length === 0) return 0;

  const of = await evidenceOf(tx, chain, fresh);
  const afters = fresh.map((i) => of(i).minedAfter);
  const bys = fresh.map((i) => of(i).minedBy);
  const lagMs = chain.headLagSeconds * 1000;
  const spans = await assignmentsAround(
    tx,
    [...new Set(fresh.map((i) => i.watched.poolAddressId))],
    afters.some((a) => a === null) ? null : new Date(Math.min(...afters.map((a) => a!.getTime())) - lagMs),
    bys.some((b) => b === null) ? null : new Date(Math.max(...bys.map((b) => b!.getTime()))),
  );
  let created = 0;
  const unattributed: { item: ObservedItem; evidence: MiningEvidence; reason: UnattributedReason }[] = [];
  for (const item of fresh) {
    const e = of(item);
    const decision = attributeTransfer(spans, { poolAddressId: item.watched.poolAddressId, ...e }, chain.headLagSeconds);
    if (decision.assignment) {
      if (await recordAttributed(tx, ctx, item, decision.assignment, e)) created++;
      continue;
    }
    unattributed.push({ item, evidence: e, reason: decision.reason });
  }
  if (unattributed.length === 0) return created;
  // Who each could have been meant for (evidence for the merchant; the decision above stands).
  const around = await assignmentsAround(
    tx,
    [...new Set(unattributed.map((u) => u.item.watched.poolAddressId))],
    afters.some((a) => a === null) ? null : new Date(Math.min(...afters.map((a) => a!.getTime())) - lagMs - CANDIDATE_PREVIOUS_WINDOW_MS),
    bys.some((b) => b === null) ? null : new Date(Math.max(...bys.map((b) => b!.getTime())) + CANDIDATE_NEXT_WINDOW_MS),
  );
  const candidatesOf = unattributed.map((u) => unattributedCandidates(around, { poolAddressId: u.item.watched.poolAddressId, ...u.evidence }, chain.headLagSeconds, u.reason));
  const references = await depositReferencesOf(tx, candidatesOf.flat().map((c) => c.span.depositBindingId));
  const lateWindows = await lateWindowsOf(tx, candidatesOf.flat().filter((c) => c.relation === 'previous').map((c) => c.span.orderId));
  // Attributed to nobody: nothing is credited; it is confirmed at the chain's order confirmations.
  const plain = unattributed.map((u, i) => {
    const lateFor = paidLateTo(candidatesOf[i], u.evidence, lateWindows);
    const reason: UnattributedReason = u.reason === 'no_holder' && lateFor ? 'paid_late' : u.reason;
    return transferRow(ctx, u.item, null, { counted: false, requiredConfirmations: chain.orderConfirmations }, u.evidence, reason, storedCandidates(candidatesOf[i], references));
  });
  for (let i = 0; i < plain.length; i += 1000) {
    const batch = plain.slice(i, i + 1000);
    const inserted = await tx.insert(transfers).values(batch).onConflictDoNothing().returning({ id: transfers.id });
    created += inserted.length;
    const isNew = new Set(inserted.map((r) => r.id));
    const fresh = batch.filter((row) => isNew.has(row.id!));
    for (const row of fresh) logPaymentSeen(ctx, row);
    // The orders they name keep count (their exceptions); a late one marks its order paidLate.
    await noteUnattributedPayments(
      tx,
      fresh.map((row) => ({
        orderIds: candidateOrderIds(row.unattributedCandidates ?? null),
        lateOrderId: row.unattributedReason === 'paid_late' ? (row.unattributedCandidates?.find((c) => c.relation === 'previous')?.orderId ?? null) : null,
      })),
      ctx.clock.now(),
    );
    // transfer.unattributed for each, in the recording transaction (design.md §6 outbox): one statement for the batch.
    await emitEvents(tx, fresh.map((row) => unattributedEvent(ctx, row)));
  }
  return created;
}

/** When each observed transfer's block was mined, as the looks (and the clock witness where enabled) tell: one read for the range. */
async function evidenceOf(tx: Tx, chain: Chain, items: readonly { observed: ChainTransfer }[]): Promise<(item: { observed: ChainTransfer }) => MiningEvidence> {
  const evidence = await miningEvidence(tx, chain.chainId, items.map((i) => i.observed.blockNumber));
  // The block-timestamp witness, on the chains it is enabled for (clock-witness.ts).
  const clocks =
    chain.clockWitnessToleranceSeconds === undefined
      ? new Map<number, ClockWindow>()
      : await clockWindows(tx, chain.chainId, items.map((i) => ({ number: i.observed.blockNumber, timestamp: i.observed.blockTimestamp })), chain.clockWitnessToleranceSeconds, chain.headLagSeconds);
  return (item) => ({
    ...(evidence.get(item.observed.blockNumber) ?? { minedAfter: null, minedBy: null }),
    clock: clocks.get(item.observed.blockNumber) ?? null,
  });
}

export interface RefundPaymentItem {
  observed: ChainTransfer;
  protocol: Protocol;
  destination: WatchedDestination;
}

/**
 * Records, inside the scan's transaction, the range's transfers into approved refunds' destinations
 * (issue 42): each as a transfer row with its refund, never an order or a deposit; it counts
 * toward the refund when it is in the refund's token and the evidence proves it was mined after
 * the approval (a payment made before, or seen only around it, is recorded and does not count).
 * Already recorded ones that moved block are moved (moveKnownTransfers). Returns the new rows.
 */
export async function recordRefundPayments(tx: Tx, ctx: ServiceContext, items: RefundPaymentItem[]): Promise<number> {
  if (items.length === 0) return 0;
  const chain = ctx.registry.get(items[0].observed.chainId);
  if (!chain) throw new Error(`recordRefundPayments: unknown chain ${items[0].observed.chainId}`);
  const fresh = await moveKnownTransfers(tx, ctx, chain.chainId, items);
  if (fresh.length === 0) return 0;
  const of = await evidenceOf(tx, chain, fresh);
  let created = 0;
  for (const item of fresh) {
    const d = item.destination;
    const evidence = of(item);
    const sameToken = item.observed.currency === d.currency && item.observed.tokenAddress === d.tokenAddress;
    const counted = sameToken && minedAfterTime(evidence, d.approvedAt, chain.headLagSeconds);
    const recipient = { poolAddressId: null, organizationId: d.organizationId, address: d.destination };
    const row = {
      ...transferRow(ctx, { observed: item.observed, protocol: item.protocol, watched: recipient }, null, { counted, requiredConfirmations: chain.orderConfirmations }, evidence, null),
      refundId: d.refundId,
    };
    const inserted = await tx.insert(transfers).values(row).onConflictDoNothing().returning({ id: transfers.id });
    if (inserted.length === 0) continue;
    created++;
    logMoney(ctx.logger, 'refund payment seen', {
      transferId: row.id,
      refundId: d.refundId,
      organizationId: d.organizationId,
      counted,
      chainId: row.chainId,
      currency: row.currency,
      amount: tokenAmount(ctx.registry, row.chainId, row.currency, row.amount as bigint),
      to: row.toAddress,
      from: row.fromAddress,
      txHash: row.txHash,
      minedAfter: row.minedAfter ?? null,
      minedBy: row.minedBy ?? null,
    });
    await recomputeRefund(tx, ctx, d.refundId);
  }
  return created;
}

/** The late-payment windows of the orders among the previous holders (set when they expired with one): one query. */
async function lateWindowsOf(tx: Tx, orderIds: (string | null)[]): Promise<Map<string, Date>> {
  const ids = [...new Set(orderIds.filter((o): o is string => o !== null))];
  if (ids.length === 0) return new Map();
  const rows = await tx
    .select({ id: orders.id, endsAt: orders.lateWindowEndsAt })
    .from(orders)
    .where(and(inArray(orders.id, ids), sql`${orders.lateWindowEndsAt} is not null`));
  return new Map(rows.map((r) => [r.id, r.endsAt!]));
}

/**
 * The expired order a no_holder transfer was paid late to: its previous holder, whose late-payment
 * window had not ended when the block may have been mined (the last time it was known unmined is
 * before the window's end, or unknown). Generous on purpose: it only makes the payment visible
 * against that order; nothing is credited without the merchant.
 */
function paidLateTo(candidates: ReturnType<typeof unattributedCandidates>, evidence: MiningEvidence, windows: Map<string, Date>): string | null {
  const previous = candidates.find((c) => c.relation === 'previous' && c.span.kind === 'order');
  const endsAt = previous?.span.orderId ? windows.get(previous.span.orderId) : undefined;
  if (!previous || !endsAt) return null;
  const after = latestKnownUnmined(evidence);
  return after === null || after.getTime() < endsAt.getTime() ? previous.span.orderId : null;
}

/** The latest time the block is known not to have been mined yet (the looks, or the clock witness). */
function latestKnownUnmined(evidence: MiningEvidence): Date | null {
  const clock = usableClock(evidence);
  const times = [evidence.minedAfter, clock?.after ?? null].filter((d): d is Date => d !== null);
  return times.length === 0 ? null : new Date(Math.max(...times.map((d) => d.getTime())));
}

/** The references of the deposit bindings among the candidates: one query, none without bindings. */
async function depositReferencesOf(tx: Tx, bindingIds: (string | null)[]): Promise<Map<string, string>> {
  const ids = [...new Set(bindingIds.filter((b): b is string => b !== null))];
  if (ids.length === 0) return new Map();
  const rows = await tx.select({ id: depositBindings.id, reference: depositBindings.depositReference }).from(depositBindings).where(inArray(depositBindings.id, ids));
  return new Map(rows.map((r) => [r.id, r.reference]));
}

function storedCandidates(candidates: ReturnType<typeof unattributedCandidates>, references: Map<string, string>): StoredTransferCandidate[] {
  return candidates.map(({ span, relation }) => ({
    kind: span.kind,
    relation,
    assignmentId: span.assignmentId,
    orderId: span.kind === 'order' ? span.orderId : null,
    depositBindingId: span.kind === 'deposit' ? span.depositBindingId : null,
    depositReference: span.kind === 'deposit' && span.depositBindingId ? (references.get(span.depositBindingId) ?? null) : null,
    heldFrom: span.startedAt.toISOString(),
    heldUntil: span.endedAt?.toISOString() ?? null,
  }));
}

/** The transfer.unattributed event of a newly recorded unattributed transfer. */
function unattributedEvent(ctx: ServiceContext, row: typeof transfers.$inferInsert) {
  return {
    organizationId: row.organizationId!,
    type: 'transfer.unattributed' as const,
    createdAt: row.detectedAt!,
    data: transferUnattributedEventData(ctx.registry, {
      id: row.id!,
      unattributedReason: row.unattributedReason!,
      chainId: row.chainId,
      currency: row.currency,
      amount: row.amount as bigint,
      txHash: row.txHash,
      fromAddress: row.fromAddress,
      toAddress: row.toAddress,
      blockNumber: row.blockNumber,
      blockTimestamp: row.blockTimestamp,
      unattributedCandidates: row.unattributedCandidates ?? null,
    }),
  };
}

/** What a transfer row keeps of the assignment it is attributed to. */
type Attribution = Pick<AssignmentSpan, 'assignmentId' | 'kind' | 'orderId' | 'depositBindingId'>;

/**
 * What is decided for a transfer when it is recorded: whether it counts toward its order and the
 * confirmations it needs (null for a deposit's: recordDeposit fixes the deposit's and stores it on
 * the transfer in the same transaction).
 */
type RecordedTerms = { counted: boolean; requiredConfirmations: number | null };

/**
 * Who received a recorded transfer: a pool address (watched), or an approved refund's destination
 * (no pool address; recordRefundPayments).
 */
type Recipient = Pick<WatchedAddress, 'organizationId' | 'address'> & { poolAddressId: number | null };

function transferRow(
  ctx: ServiceContext,
  item: { observed: ChainTransfer; protocol: Protocol; watched: Recipient },
  assignment: Attribution | null,
  terms: RecordedTerms,
  evidence: MiningEvidence,
  unattributedReason: UnattributedReason | null,
  candidates: StoredTransferCandidate[] | null = null,
): typeof transfers.$inferInsert {
  const o = item.observed;
  // Kept only where it was a witness (consistent with the looks).
  const clock = usableClock(evidence);
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
    requiredConfirmations: terms.requiredConfirmations,
    status: 'pending',
    organizationId: item.watched.organizationId,
    poolAddressId: item.watched.poolAddressId,
    assignmentId: assignment?.assignmentId ?? null,
    orderId: assignment?.kind === 'order' ? assignment.orderId : null,
    depositBindingId: assignment?.kind === 'deposit' ? assignment.depositBindingId : null,
    counted: terms.counted,
    detectedAt: ctx.clock.now(),
    minedAfter: evidence.minedAfter,
    minedBy: evidence.minedBy,
    clockMinedAfter: clock?.after ?? null,
    clockMinedBy: clock?.by ?? null,
    unattributedReason: assignment ? null : unattributedReason,
    unattributedCandidates: assignment ? null : candidates,
  };
}

type OrderTerms = Pick<typeof orders.$inferSelect, 'chainId' | 'currency' | 'chosenRoutes' | 'createdAt' | 'graceEndsAt' | 'requiredConfirmations'>;

/** What the order fixed that the recording needs: its rule's inputs (its routes, for a USD order) and its confirmations. */
async function orderTerms(tx: Tx, orderId: string): Promise<OrderTerms | null> {
  const [order] = await tx
    .select({
      chainId: orders.chainId,
      currency: orders.currency,
      chosenRoutes: orders.chosenRoutes,
      createdAt: orders.createdAt,
      graceEndsAt: orders.graceEndsAt,
      requiredConfirmations: orders.requiredConfirmations,
    })
    .from(orders)
    .where(eq(orders.id, orderId));
  return order ?? null;
}

/**
 * Whether a transfer in a block stamped `blockTimestamp` counts toward its order: the order's rule
 * (transferCountsTowardOrder), applied by the recording only, here, and stored as `counted`.
 */
function countsToward(order: OrderTerms | null, transfer: { chainId: string; currency: string; blockTimestamp: Date }): boolean {
  return !!order && transferCountsTowardOrder(order, transfer);
}

/** Inserts one attributed transfer and lets its order or deposit react. False when it already existed. */
async function recordAttributed(tx: Tx, ctx: ServiceContext, item: ObservedItem, assignment: Attribution, evidence: MiningEvidence): Promise<boolean> {
  const o = item.observed;
  const order = assignment.kind === 'order' && assignment.orderId ? await orderTerms(tx, assignment.orderId) : null;
  // The route it came by (a USD order's routes need not share confirmations).
  const route = order ? routeOfTransfer(order, o) : null;
  const terms: RecordedTerms = {
    // The order's rule, applied here once and stored (order-state.ts reads the flag as it is).
    counted: countsToward(order, { chainId: o.chainId, currency: o.currency, blockTimestamp: new Date(o.blockTimestamp * 1000) }),
    requiredConfirmations: route?.requiredConfirmations ?? order?.requiredConfirmations ?? null,
  };
  const row = transferRow(ctx, item, assignment, terms, evidence, null);
  const inserted = await tx.insert(transfers).values(row).onConflictDoNothing().returning({ id: transfers.id });
  if (inserted.length === 0) return false;
  logPaymentSeen(ctx, row);
  if (row.depositBindingId) await recordDeposit(tx, ctx, row.id!);
  // Its token, after its grace: a late payment to a still-held address, recorded against the order (paidLate).
  if (row.orderId && order && !terms.counted && route) await noteLatePayment(tx, row.orderId, ctx.clock.now());
  if (row.orderId) await recomputeOrder(tx, ctx, row.orderId);
  return true;
}

/**
 * Splits off the items already recorded; those whose block changed move to it. One query for the
 * range's transactions. A re-mined transaction is the same transfer (design.md §4b): a `reorged`
 * row is `confirmed` again; a `dropped` one (orphaned while pending) is `pending` again in its new
 * block, its deposit pending again without a second deposit.pending, its order recomputed. Its
 * attribution and evidence stay those of its first sighting: a payment sent before an address
 * changed hands does not change holder by being mined again later. Whether a pending or dropped
 * one counts toward its order is decided again on its new block (the grace end is about where the
 * payment is mined); a confirmed or reorged one was credited, and keeps counting.
 */
async function moveKnownTransfers<T extends { observed: ChainTransfer }>(tx: Tx, ctx: ServiceContext, chainId: string, items: T[]): Promise<T[]> {
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
      depositBindingId: transfers.depositBindingId,
      unattributedCandidates: transfers.unattributedCandidates,
      refundId: transfers.refundId,
    })
    .from(transfers)
    .where(and(eq(transfers.chainId, chainId), sql`${transfers.txHash} = ANY(${sql.param(hashes)}::text[])`))
    // The live row of an identity wins; else the newest dropped one (older data may hold several).
    .orderBy(sql`(${transfers.status} = 'dropped')`, desc(transfers.detectedAt));
  if (known.length === 0) return items;
  const byIdentity = new Map<string, (typeof known)[number]>();
  const byPosition = new Map<string, (typeof known)[number]>();
  for (const k of known) {
    if (!byIdentity.has(`${k.txHash}|${k.indexInTx}`)) byIdentity.set(`${k.txHash}|${k.indexInTx}`, k);
    if (k.status !== 'dropped' && !byPosition.has(`${k.blockHash}|${k.logIndex}`)) byPosition.set(`${k.blockHash}|${k.logIndex}`, k);
  }
  const fresh: T[] = [];
  for (const item of items) {
    const o = item.observed;
    const existing = byIdentity.get(`${o.txHash}|${o.indexInTx}`) ?? byPosition.get(`${o.blockHash}|${o.blockLogIndex}`);
    if (!existing) {
      fresh.push(item);
      continue;
    }
    if (existing.blockHash === o.blockHash && existing.status !== 'reorged' && existing.status !== 'dropped') continue;
    // Re-mined: the same transfer in another block (or back in its block). Never recorded anew.
    const status = existing.status === 'reorged' ? 'confirmed' : existing.status === 'dropped' ? 'pending' : existing.status;
    const blockTimestamp = new Date(o.blockTimestamp * 1000);
    // Its holder stays that of its first sighting. Whether an uncredited one (pending, or dropped
    // while pending) counts is the order's rule on the block it is in now (one re-mined after the
    // grace end no longer counts). A confirmed or reorged one keeps its flag: a confirmed credit is
    // final (design.md §4b), however late the block it is re-mined in is stamped.
    const redecide = existing.orderId !== null && (existing.status === 'pending' || existing.status === 'dropped');
    const counted = redecide ? countsToward(await orderTerms(tx, existing.orderId!), { chainId, currency: o.currency, blockTimestamp }) : undefined;
    await tx
      .update(transfers)
      .set({
        blockNumber: o.blockNumber,
        blockHash: o.blockHash,
        blockTimestamp,
        logIndex: o.blockLogIndex,
        status,
        ...(counted === undefined ? {} : { counted }),
        ...(existing.status === 'dropped' ? { droppedAt: null, confirmations: 0 } : {}),
      })
      .where(eq(transfers.id, existing.id));
    ctx.logger.warn(
      { chainId, transferId: existing.id, txHash: o.txHash, block: o.blockNumber, previousStatus: existing.status },
      'a recorded transfer was re-mined in another block: moved to it',
    );
    if (existing.status === 'dropped' && existing.depositBindingId && !(await restorePendingDeposit(tx, ctx, existing.id))) await recordDeposit(tx, ctx, existing.id);
    if (existing.refundId) await recomputeRefund(tx, ctx, existing.refundId);
    // Unattributed and back on the chain: the orders it names count it again (dropping forgot it).
    if (existing.status === 'dropped' && !existing.orderId && !existing.depositBindingId && !existing.refundId) {
      await noteUnattributedPayments(tx, [{ orderIds: candidateOrderIds(existing.unattributedCandidates), lateOrderId: null }], ctx.clock.now());
    }
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
    // Why nobody (README "Attribution"), and the evidence it was decided on.
    unattributedReason: t.unattributedReason ?? null,
    minedAfter: t.minedAfter ?? null,
    minedBy: t.minedBy ?? null,
    clockMinedAfter: t.clockMinedAfter ?? null,
    clockMinedBy: t.clockMinedBy ?? null,
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
      unattributedCandidates: transfers.unattributedCandidates,
      refundId: transfers.refundId,
    });
  for (const t of dropped) {
    // A refund's payment that left the chain no longer pays it.
    if (t.refundId) await recomputeRefund(tx, ctx, t.refundId);
    // Unattributed: the orders it named no longer wait on a payment that left the chain.
    else if (!t.orderId && !t.depositBindingId) await forgetUnattributedPayment(tx, candidateOrderIds(t.unattributedCandidates));
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
