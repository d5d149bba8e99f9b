import { and, asc, desc, count, eq, inArray, notInArray, or, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client';
import { chainCheckpoints, deposits, depositBindings, orders, organizations, refunds, transfers, type ChosenOrderRoute, type RefundKind, type RefundStatus } from '../../db/schema';
import { getCheckpoint } from '../chains/checkpoints';
import type { ServiceContext } from '../service/context';
import { USD, USD_DECIMALS, type Protocol } from '../chains/chain';
import { AppError, notFound, validationError } from '../platform/errors';
import { formatAmount, parseAmount } from '../platform/amounts';
import { newId } from '../platform/ids';
import { randomToken128 } from '../platform/secrets';
import { paginate } from '../platform/sql-fragments';
import { emitEvent } from '../events/events';
import { auditAction, type Actor } from '../reconciliation/actor';
import { awaitsAttribution } from '../reconciliation/attribute-transfer';
import { presentRefund, type RefundRow } from '../views/refund';
import { tokenUnitsInUsd } from '../views/order';
import { checkRefundDestination, type DestinationRefusal } from './destination';
import { refundEventType } from './refund-events';

/**
 * Refunds without custody (issue 42, design.md §4d): an expected outgoing payment the merchant
 * makes from its own wallet. Every operation here is one transaction, audit-logged with its actor
 * (and reason where it takes one); the API and the dashboard call these and nothing else.
 */

/** What a refund returns: an order, a deposit reference's deposits, or a transfer nobody was credited with. */
export type RefundSource = { orderId: string } | { depositReference: string } | { transferId: string };

export interface IssueRefundInput {
  /** Decimal string in token units; default: an overpaid order's excess, else all that is left to refund. */
  amount?: string;
  currency?: string;
  chainId?: string;
  reason: string;
  /** RFC 3339 with an offset; default: DEFAULT_REFUND_DAYS from now. */
  expiresAt?: string;
}

export const DEFAULT_REFUND_DAYS = 7;
/** Longest a claim link stays open: long enough for a payer to answer, short enough to be looked after. */
export const MAX_REFUND_DAYS = 90;

/** Refunds that no longer hold any of the money they were issued for. */
const RELEASED: RefundStatus[] = ['cancelled', 'expired'];

const DAY_MS = 24 * 3600_000;

/** What the payment the refund returns received, and where (the refund's token and chain). */
interface Refundable {
  source: RefundSource;
  chainId: string;
  currency: string;
  received: bigint;
  alreadyRefunded: bigint;
  /** The default amount: an overpaid order's excess, else everything received. */
  suggested: bigint;
}

/**
 * Issues a refund (Admin, Owner: awaiting_claim, with its claim link) or requests one (Member:
 * requested, which an Admin or Owner issues with issueRequestedRefund). The source's row is locked
 * first (the order; the deposit reference's bindings; the transfer), so two refunds at once of one
 * payment are decided one after the other and their sum never exceeds what it received.
 */
export async function issueRefund(ctx: ServiceContext, actor: Actor, mayIssue: boolean, source: RefundSource, input: IssueRefundInput): Promise<RefundRow> {
  const reason = requireReason(input.reason);
  const now = ctx.clock.now();
  const expiresAt = expiryOf(input.expiresAt, now);
  return ctx.db.transaction(async (tx) => {
    const refundable = await lockRefundable(tx, ctx.registry, actor.organizationId, source, input);
    const chain = ctx.registry.requireOfferedChain(refundable.chainId);
    const token = ctx.registry.requireToken(chain, refundable.currency);
    const decimals = token.decimals;
    const left = refundable.received - refundable.alreadyRefunded;
    const amount = input.amount !== undefined ? parseAmount(input.amount, decimals) : refundable.suggested < left ? refundable.suggested : left;
    if (left <= 0n || amount <= 0n) {
      throw new AppError(
        'INVALID_AMOUNT',
        `Nothing is left to refund: received ${formatAmount(refundable.received, decimals)} ${refundable.currency}, of which refunds not cancelled or expired already take ${formatAmount(refundable.alreadyRefunded, decimals)}`,
        [{ field: 'amount', message: 'nothing left to refund' }],
      );
    }
    if (amount > left) {
      throw new AppError(
        'INVALID_AMOUNT',
        `amount ${formatAmount(amount, decimals)} is more than is left to refund: ${formatAmount(left, decimals)} ${refundable.currency} (received ${formatAmount(refundable.received, decimals)}, already refunded ${formatAmount(refundable.alreadyRefunded, decimals)})`,
        [{ field: 'amount', message: `at most ${formatAmount(left, decimals)}` }],
      );
    }
    const status: RefundStatus = mayIssue ? 'awaiting_claim' : 'requested';
    const [row] = await tx
      .insert(refunds)
      .values({
        id: newId('rf'),
        organizationId: actor.organizationId,
        kind: 'refund',
        orderId: 'orderId' in source ? source.orderId : null,
        depositReference: 'depositReference' in source ? source.depositReference : null,
        transferId: 'transferId' in source ? source.transferId : null,
        amount,
        currency: refundable.currency,
        chainId: chain.chainId,
        protocol: chain.protocol as Protocol,
        tokenAddress: token.address!,
        reason,
        status,
        claimToken: newClaimToken(),
        requestedBy: actor.name,
        issuedBy: mayIssue ? actor.name : null,
        issuedAt: mayIssue ? now : null,
        expiresAt,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    if ('orderId' in source) await addToOrderRefunded(tx, source.orderId, amount, decimals);
    await auditAction(tx, actor, mayIssue ? 'refund.issued' : 'refund.requested', row.id, {
      source: sourceText(source),
      amount: formatAmount(amount, decimals),
      currency: row.currency,
      chainId: row.chainId,
      reason,
    });
    return row;
  });
}

/** A Member's requested refund, issued by an Admin or Owner: awaiting_claim, its claim link now valid. */
export async function issueRequestedRefund(ctx: ServiceContext, actor: Actor, refundId: string): Promise<RefundRow> {
  return ctx.db.transaction(async (tx) => {
    const refund = await lockRefund(tx, actor.organizationId, refundId);
    requireStatus(refund, ['requested'], 'issued');
    const now = ctx.clock.now();
    const [row] = await tx
      .update(refunds)
      .set({ status: 'awaiting_claim', issuedBy: actor.name, issuedAt: now, updatedAt: now })
      .where(eq(refunds.id, refund.id))
      .returning();
    await auditAction(tx, actor, 'refund.issued', refund.id, { requestedBy: refund.requestedBy });
    return row;
  });
}

/** The merchant approves a claimed refund: it will pay it from its own wallet (the view's paymentUri, the export). */
export async function approveRefund(ctx: ServiceContext, actor: Actor, refundId: string): Promise<RefundRow> {
  return ctx.db.transaction(async (tx) => {
    const refund = await lockRefund(tx, actor.organizationId, refundId);
    requireStatus(refund, ['claimed'], 'approved');
    const now = ctx.clock.now();
    const [row] = await tx.update(refunds).set({ status: 'approved', approvedBy: actor.name, approvedAt: now, updatedAt: now }).where(eq(refunds.id, refund.id)).returning();
    await auditAction(tx, actor, `${refund.kind}.approved`, refund.id, { destination: refund.destination });
    return row;
  });
}

/**
 * Cancels a refund that is not completed (an approved one too: the merchant's decision that it
 * will not be paid). Its amount is free to refund again.
 */
export async function cancelRefund(ctx: ServiceContext, actor: Actor, refundId: string, reason?: string): Promise<RefundRow> {
  return ctx.db.transaction(async (tx) => {
    const refund = await lockRefund(tx, actor.organizationId, refundId);
    requireStatus(refund, ['requested', 'awaiting_claim', 'claimed', 'approved'], 'cancelled');
    const now = ctx.clock.now();
    const [row] = await tx.update(refunds).set({ status: 'cancelled', cancelledBy: actor.name, cancelledAt: now, updatedAt: now }).where(eq(refunds.id, refund.id)).returning();
    await releaseFromOrder(tx, ctx, refund);
    await auditAction(tx, actor, `${refund.kind}.cancelled`, refund.id, { previousStatus: refund.status, reason: reason?.trim() || null });
    return row;
  });
}

export type ClaimOutcome = { ok: true; refund: RefundRow } | { ok: false; refusal: DestinationRefusal | { code: 'not_claimable' } };

/**
 * The payer's claim on the public page: a destination typed twice, checked for the family
 * (./destination.ts), then `claimed` with refund.claimed, once. A refused address, or a refund not
 * awaiting its claim, changes nothing. Audit-logged as the payer, from the page's IP.
 */
export async function claimRefund(ctx: ServiceContext, claimToken: string, entry: string, confirmation: string, ip: string | null): Promise<ClaimOutcome> {
  return ctx.db.transaction(async (tx) => {
    const [refund] = await tx.select().from(refunds).where(eq(refunds.claimToken, claimToken)).for('update');
    if (!refund) throw notFound('Refund');
    const now = ctx.clock.now();
    if (refund.status !== 'awaiting_claim' || refund.expiresAt <= now) return { ok: false, refusal: { code: 'not_claimable' } };
    const checked = await checkRefundDestination(tx, refund, entry, confirmation);
    if (!checked.ok) return checked;
    const [row] = await tx
      .update(refunds)
      .set({ status: 'claimed', destination: checked.address, claimedAt: now, updatedAt: now })
      .where(eq(refunds.id, refund.id))
      .returning();
    await emitEvent(tx, { organizationId: row.organizationId, type: refundEventType(row.kind, 'claimed'), data: presentRefund(ctx, row), createdAt: now });
    await auditAction(tx, { organizationId: row.organizationId, userId: null, name: `${row.kind === 'payout' ? 'recipient' : 'payer'} (claim page)`, ip }, `${row.kind}.claimed`, row.id, { destination: checked.address });
    return { ok: true, refund: row };
  });
}

/** What the public claim page shows: the refund by its token and who refunds it; null for an unknown token or a refund not issued yet. */
export async function findRefundClaim(db: DbOrTx, claimToken: string): Promise<{ refund: RefundRow; organizationName: string; supportContact: string | null } | null> {
  const [row] = await db
    .select({ refund: refunds, organizationName: organizations.name, supportContact: organizations.supportContact })
    .from(refunds)
    .innerJoin(organizations, eq(organizations.id, refunds.organizationId))
    .where(eq(refunds.claimToken, claimToken));
  if (!row || row.refund.status === 'requested') return null;
  return row;
}

export async function getRefund(db: DbOrTx, organizationId: string, refundId: string): Promise<RefundRow> {
  const [row] = await db.select().from(refunds).where(and(eq(refunds.id, refundId), eq(refunds.organizationId, organizationId)));
  if (!row) throw notFound('Refund');
  return row;
}

export const REFUND_SORT_FIELDS = ['createdAt', 'expiresAt'] as const;

export interface RefundFilters {
  /** refund or payout (GET /refunds?kind=payout lists the payouts). */
  kind?: RefundKind;
  status?: RefundStatus;
  orderId?: string;
  depositReference?: string;
  transferId?: string;
}

export interface ListRefundsQuery extends RefundFilters {
  page: number;
  limit: number;
  sortBy: (typeof REFUND_SORT_FIELDS)[number];
  sortOrder: 'asc' | 'desc';
}

function filterCondition(organizationId: string, q: RefundFilters): SQL | undefined {
  return and(
    eq(refunds.organizationId, organizationId),
    q.kind ? eq(refunds.kind, q.kind) : undefined,
    q.status ? eq(refunds.status, q.status) : undefined,
    q.orderId ? eq(refunds.orderId, q.orderId) : undefined,
    q.depositReference ? eq(refunds.depositReference, q.depositReference) : undefined,
    q.transferId ? eq(refunds.transferId, q.transferId) : undefined,
  );
}

export async function listRefunds(db: DbOrTx, organizationId: string, q: ListRefundsQuery): Promise<{ items: RefundRow[]; total: number }> {
  const where = filterCondition(organizationId, q);
  const direction = q.sortOrder === 'asc' ? asc : desc;
  const column = q.sortBy === 'expiresAt' ? refunds.expiresAt : refunds.createdAt;
  const [items, [{ total }]] = await Promise.all([
    paginate(db.select().from(refunds).where(where).orderBy(direction(column), direction(refunds.id)).$dynamic(), q),
    db.select({ total: count() }).from(refunds).where(where),
  ]);
  return { items, total };
}

/** The approved refunds of an organization, oldest first (the batch export), at most `limit`. */
export async function approvedRefunds(db: DbOrTx, organizationId: string, limit: number): Promise<RefundRow[]> {
  return db
    .select()
    .from(refunds)
    .where(and(eq(refunds.organizationId, organizationId), eq(refunds.status, 'approved')))
    .orderBy(asc(refunds.createdAt), asc(refunds.id))
    .limit(limit);
}

export interface RefundExpiryResult {
  expired: number;
}

/** Statuses whose refund expires by the clock alone: nothing can have been paid toward it yet. */
const EXPIRING_BY_CLOCK: ReadonlySet<RefundStatus> = new Set<RefundStatus>(['requested', 'awaiting_claim', 'claimed']);

/**
 * Pure: whether a refund (or payout) expires now. Requested, awaiting its claim or claimed: once
 * expiresAt has passed. Approved: the merchant may already have paid it, and expiry never beats
 * detection (design.md §4), so only when expiresAt has passed, nothing counted was paid toward it
 * (amountPaid 0: no counted payment, pending or confirmed) and its chain has been scanned past
 * expiresAt (the checkpoint's block time ≥ expiresAt: a payment mined before then has been seen).
 * A partly paid one stays approved: the merchant completes or cancels it. Others never expire.
 */
export function refundExpires(
  refund: Pick<RefundRow, 'status' | 'expiresAt' | 'amountPaid'>,
  checkpoint: { blockTimestamp: Date } | null,
  now: Date,
): boolean {
  if (now.getTime() < refund.expiresAt.getTime()) return false;
  if (EXPIRING_BY_CLOCK.has(refund.status)) return true;
  if (refund.status !== 'approved') return false;
  return refund.amountPaid === 0n && checkpoint !== null && checkpoint.blockTimestamp.getTime() >= refund.expiresAt.getTime();
}

/**
 * The refund-expiry job's work: refunds (and payouts) for which refundExpires holds become
 * `expired` (refund.expired), and their amount is free to refund again. The query applies the same
 * rule in SQL (the approved ones against their chain's checkpoint) so a batch never holds refunds
 * that are waiting for the scanner; each row is decided again by refundExpires once locked.
 * Batches claimed with SKIP LOCKED, so overlapping runs share the work; the scanner records a
 * refund's payment and moves the checkpoint in one transaction, so a checkpoint past expiresAt
 * comes with every payment mined before it already in amount_paid.
 */
export async function expireDueRefunds(ctx: ServiceContext, options: { batchSize?: number; maxBatches?: number } = {}): Promise<RefundExpiryResult> {
  const batchSize = options.batchSize ?? 100;
  const maxBatches = options.maxBatches ?? 50;
  const now = ctx.clock.now();
  const at = sql`${now.toISOString()}::timestamptz`;
  let expired = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const n = await ctx.db.transaction(async (tx) => {
      const due = await tx
        .select()
        .from(refunds)
        .where(
          and(
            sql`${refunds.expiresAt} <= ${at}`,
            or(
              inArray(refunds.status, [...EXPIRING_BY_CLOCK]),
              and(
                eq(refunds.status, 'approved'),
                sql`${refunds.amountPaid} = 0`,
                sql`exists (select 1 from ${chainCheckpoints} where ${chainCheckpoints.chainId} = ${refunds.chainId} and ${chainCheckpoints.blockTimestamp} >= ${refunds.expiresAt})`,
              ),
            ),
          ),
        )
        .orderBy(asc(refunds.expiresAt))
        .limit(batchSize)
        .for('update', { skipLocked: true });
      const checkpoints = new Map<string, Awaited<ReturnType<typeof getCheckpoint>>>();
      for (const refund of due) {
        if (refund.status === 'approved' && !checkpoints.has(refund.chainId)) checkpoints.set(refund.chainId, await getCheckpoint(tx, refund.chainId));
        if (!refundExpires(refund, checkpoints.get(refund.chainId) ?? null, now)) continue;
        const [row] = await tx.update(refunds).set({ status: 'expired', expiredAt: now, updatedAt: now }).where(eq(refunds.id, refund.id)).returning();
        await releaseFromOrder(tx, ctx, refund);
        await emitEvent(tx, { organizationId: row.organizationId, type: refundEventType(row.kind, 'expired'), data: presentRefund(ctx, row), createdAt: now });
        expired++;
      }
      return due.length;
    });
    if (n < batchSize) break;
  }
  return { expired };
}

// ---------------------------------------------------------------------------

export function newClaimToken(): string {
  return randomToken128();
}

export function requireReason(text: string, kind: RefundKind = 'refund'): string {
  const reason = text.trim();
  if (reason === '') throw validationError(`reason must say why the ${kind} is made`, [{ field: 'reason', message: 'must not be empty' }]);
  return reason;
}

export function expiryOf(text: string | undefined, now: Date): Date {
  if (text === undefined) return new Date(now.getTime() + DEFAULT_REFUND_DAYS * DAY_MS);
  const at = /(Z|[+-]\d{2}:\d{2})$/i.test(text) ? new Date(text) : new Date(NaN);
  if (Number.isNaN(at.getTime())) {
    throw validationError('expiresAt must be an RFC 3339 time with an offset, e.g. 2030-01-31T12:00:00Z', [{ field: 'expiresAt', message: 'must be an RFC 3339 time with an offset' }]);
  }
  if (at <= now || at.getTime() > now.getTime() + MAX_REFUND_DAYS * DAY_MS) {
    throw validationError(`expiresAt must be in the future and at most ${MAX_REFUND_DAYS} days away`, [{ field: 'expiresAt', message: `must be in the future, at most ${MAX_REFUND_DAYS} days away` }]);
  }
  return at;
}

function sourceText(source: RefundSource): string {
  if ('orderId' in source) return `order ${source.orderId}`;
  if ('depositReference' in source) return `deposit reference ${source.depositReference}`;
  return `transfer ${source.transferId}`;
}

async function lockRefund(tx: Tx, organizationId: string, refundId: string): Promise<RefundRow> {
  const [row] = await tx.select().from(refunds).where(and(eq(refunds.id, refundId), eq(refunds.organizationId, organizationId))).for('update');
  if (!row) throw notFound('Refund');
  return row;
}

function requireStatus(refund: RefundRow, allowed: RefundStatus[], becoming: string): void {
  if (!allowed.includes(refund.status)) {
    const what = refund.kind === 'payout' ? 'payout' : 'refund';
    throw new AppError('INVALID_STATUS_TRANSITION', `${what === 'payout' ? 'Payout' : 'Refund'} ${refund.id} is ${refund.status}: only a ${what} that is ${allowed.join(' or ')} can be ${becoming}`);
  }
}

async function addToOrderRefunded(tx: Tx, orderId: string, amount: bigint, decimals: number): Promise<void> {
  await tx.update(orders).set({ amountRefunded: sql`${orders.amountRefunded} + ${inOrderUnits(amount, decimals)}` }).where(eq(orders.id, orderId));
}

/** A refund cancelled or expired no longer holds its order's money. */
async function releaseFromOrder(tx: Tx, ctx: Pick<ServiceContext, 'registry'>, refund: RefundRow): Promise<void> {
  if (refund.orderId === null) return;
  const held = inOrderUnits(refund.amount, ctx.registry.tokenDecimals(refund.chainId, refund.currency));
  await tx
    .update(orders)
    .set({ amountRefunded: sql`greatest(${orders.amountRefunded} - ${held}, 0)` })
    .where(eq(orders.id, refund.orderId));
}

/** A refund's amount (base units of its token) in its order's units: USD base units for a USD order (core/orders/routes.ts). */
const inOrderUnits = (amount: bigint, decimals: number): SQL =>
  sql`(case when ${orders.currency} = ${USD} then ${tokenUnitsInUsd(amount, decimals).toString()}::numeric else ${amount.toString()}::numeric end)`;

/** The currency and chain the refund is paid in: the payment's; another is refused (amounts are in its token's units). */
function sameTokenAs(input: Pick<IssueRefundInput, 'currency' | 'chainId'>, payment: { currency: string; chainId: string }, what: string): { currency: string; chainId: string } {
  if ((input.currency !== undefined && input.currency !== payment.currency) || (input.chainId !== undefined && input.chainId !== payment.chainId)) {
    throw validationError(`${what} was paid in ${payment.currency} on ${payment.chainId}: a refund is paid in the token and on the chain of the payment it returns`, [
      { field: input.currency !== undefined && input.currency !== payment.currency ? 'currency' : 'chainId', message: `must be ${payment.currency} on ${payment.chainId}` },
    ]);
  }
  return payment;
}

/** Locks what a refund returns and says how much it received and how much refunds already take. */
async function lockRefundable(tx: Tx, registry: Pick<ServiceContext['registry'], 'tokenDecimals'>, organizationId: string, source: RefundSource, input: IssueRefundInput): Promise<Refundable> {
  if ('orderId' in source) {
    const [order] = await tx
      .select({
        id: orders.id,
        amount: orders.amount,
        received: orders.amountReceived,
        refunded: orders.amountRefunded,
        currency: orders.currency,
        chainId: orders.chainId,
        routeCurrency: orders.routeCurrency,
        chosenRoutes: orders.chosenRoutes,
      })
      .from(orders)
      .where(and(eq(orders.id, source.orderId), eq(orders.organizationId, organizationId)))
      .for('update');
    if (!order) throw notFound('Order');
    if (order.chosenRoutes) return usdOrderRefundable(tx, registry, source, input, { ...order, chosenRoutes: order.chosenRoutes });
    const { currency, chainId } = sameTokenAs(input, { currency: order.currency, chainId: order.chainId! }, `Order ${order.id}`);
    const suggested = order.received > order.amount ? order.received - order.amount : order.received;
    return { source, currency, chainId, received: order.received, alreadyRefunded: order.refunded, suggested };
  }
  if ('transferId' in source) {
    const [t] = await tx.select().from(transfers).where(and(eq(transfers.id, source.transferId), eq(transfers.organizationId, organizationId))).for('update');
    if (!t) throw notFound(`Transfer ${source.transferId}`);
    if (!awaitsAttribution(t)) {
      throw new AppError('CONFLICT', `Transfer ${t.id} is credited to ${t.orderId ? `order ${t.orderId}` : 'a deposit reference'}: refund it through its order or deposit reference`);
    }
    if (t.status !== 'confirmed' && t.status !== 'reorged') {
      throw new AppError('CONFLICT', `Transfer ${t.id} is ${t.status}: only a confirmed payment can be refunded`);
    }
    const { currency, chainId } = sameTokenAs(input, t, `Transfer ${t.id}`);
    return { source, currency, chainId, received: t.amount, alreadyRefunded: await refundedOf(tx, eq(refunds.transferId, t.id)), suggested: t.amount };
  }
  const bindings = await tx
    .select({ id: depositBindings.id })
    .from(depositBindings)
    .where(and(eq(depositBindings.organizationId, organizationId), eq(depositBindings.depositReference, source.depositReference)))
    .for('update');
  if (bindings.length === 0) throw new AppError('DEPOSIT_REFERENCE_NOT_FOUND', `Deposit reference "${source.depositReference}" not found`);
  const received = await tx
    .select({ chainId: transfers.chainId, currency: transfers.currency, units: sql<string>`sum(${transfers.amount})::text`, last: sql<string>`max(${deposits.detectedAt})::text` })
    .from(deposits)
    .innerJoin(transfers, eq(transfers.id, deposits.transferId))
    .where(and(inArray(deposits.bindingId, bindings.map((b) => b.id)), inArray(deposits.status, ['confirmed', 'completed'])))
    .groupBy(transfers.chainId, transfers.currency);
  if (received.length === 0) {
    throw new AppError('INVALID_AMOUNT', `Deposit reference "${source.depositReference}" has no confirmed deposit to refund`, [{ field: 'amount', message: 'nothing received' }]);
  }
  // Its token: the one asked for, else the one of its latest confirmed deposit.
  const latest = [...received].sort((a, b) => (a.last < b.last ? 1 : -1))[0];
  const currency = input.currency ?? (input.chainId ? (received.find((r) => r.chainId === input.chainId)?.currency ?? latest.currency) : latest.currency);
  const chainId = input.chainId ?? (input.currency ? (received.find((r) => r.currency === input.currency)?.chainId ?? latest.chainId) : latest.chainId);
  const mine = received.find((r) => r.currency === currency && r.chainId === chainId);
  if (!mine) {
    throw validationError(`Deposit reference "${source.depositReference}" received no confirmed ${currency} on ${chainId}: a refund is paid in the token and on the chain of the deposits it returns`, [
      { field: input.currency ? 'currency' : 'chainId', message: `received: ${received.map((r) => `${r.currency} on ${r.chainId}`).join(', ')}` },
    ]);
  }
  const total = BigInt(mine.units);
  const alreadyRefunded = await refundedOf(
    tx,
    and(eq(refunds.organizationId, organizationId), eq(refunds.depositReference, source.depositReference), eq(refunds.currency, currency), eq(refunds.chainId, chainId))!,
  );
  return { source, currency, chainId, received: total, alreadyRefunded, suggested: total };
}

/**
 * A USD order's refundable: a refund is paid in one of the routes it was paid by (the one named, else
 * its current route), up to what that route received less refunds in that token; by default the
 * order's excess in that token (rounded down), else what the route received.
 */
async function usdOrderRefundable(
  tx: Tx,
  registry: Pick<ServiceContext['registry'], 'tokenDecimals'>,
  source: RefundSource & { orderId: string },
  input: IssueRefundInput,
  order: { id: string; amount: bigint; received: bigint; chainId: string | null; routeCurrency: string | null; chosenRoutes: ChosenOrderRoute[] },
): Promise<Refundable> {
  const chainId = input.chainId ?? order.chainId;
  const currency = input.currency ?? order.routeCurrency;
  const route = order.chosenRoutes.find((r) => r.chainId === chainId && r.currency === currency);
  if (!route) {
    const paidBy = order.chosenRoutes.map((r) => `${r.currency} on ${r.chainId}`).join(', ') || 'no route yet';
    throw validationError(`Order ${order.id} is priced in USD and was given these routes: ${paidBy}. A refund is paid in the token and on the chain of one of them (name it with currency and chainId)`, [
      { field: 'currency', message: 'must be one of the order\'s routes' },
    ]);
  }
  const decimals = registry.tokenDecimals(route.chainId, route.currency);
  const excess = order.received > order.amount ? (order.received - order.amount) / 10n ** BigInt(USD_DECIMALS - decimals) : 0n;
  const received = BigInt(route.received);
  const alreadyRefunded = await refundedOf(tx, and(eq(refunds.orderId, order.id), eq(refunds.currency, route.currency), eq(refunds.chainId, route.chainId))!);
  return { source, currency: route.currency, chainId: route.chainId, received, alreadyRefunded, suggested: excess > 0n ? excess : received };
}

async function refundedOf(tx: Tx, where: SQL): Promise<bigint> {
  const [{ units }] = await tx
    .select({ units: sql<string>`coalesce(sum(${refunds.amount}), 0)::text` })
    .from(refunds)
    .where(and(where, notInArray(refunds.status, RELEASED)));
  return BigInt(units);
}
