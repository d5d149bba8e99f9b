import { and, asc, count, countDistinct, desc, eq, ilike, inArray, isNull, min, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { depositBindings, deposits, transfers } from '../../db/schema';
import type { Protocol } from '../chains/registry';
import type { ServiceContext } from '../service/context';
import { AppError } from '../platform/errors';
import { bindingView, openBindingsFilter, openRegistrations } from './bindings';
import { depositFrom, selectDeposits } from './records';
import type { BindingView } from '../views/deposit-reference';
import type { DepositRecord, DepositStatus } from '../views/deposit';
import { totalsOf, type DepositSumRow, type DepositTotals } from './totals';
import { escapeLike, faceValueSql, paginate } from '../platform/sql-fragments';

/**
 * Reads of deposit references and deposits. Totals count credited deposits only (confirmed and
 * completed): pending ones may still be dropped by a reorg, dropped ones never counted. They cover
 * every deposit made to the reference in the family, including under an earlier binding of the
 * same reference.
 */

export interface ReferenceSummary {
  depositReference: string;
  /** Open bindings, earliest first (one per protocol family). */
  bindings: BindingView[];
  /** Totals over the families of `bindings`. */
  totals: DepositTotals;
  totalsByProtocol: Partial<Record<Protocol, DepositTotals>>;
}

export interface ReferenceDetail extends ReferenceSummary {
  /** The most recent deposits (not dropped), newest first, at most RECENT_DEPOSITS. */
  recentDeposits: DepositRecord[];
}

export const RECENT_DEPOSITS = 50;
const CREDITED: DepositStatus[] = ['confirmed', 'completed'];

/** One reference's bindings and totals; unknown (or another organization's) is 404. */
export async function getDepositReference(
  ctx: ServiceContext,
  organizationId: string,
  depositReference: string,
  options: { protocol?: Protocol } = {},
): Promise<ReferenceDetail> {
  const [summary] = await summarize(ctx, organizationId, [depositReference], options.protocol);
  if (!summary) throw new AppError('DEPOSIT_REFERENCE_NOT_FOUND', `Deposit reference "${depositReference}" not found`);
  const protocols = summary.bindings.map((b) => b.protocol);
  const rows = await selectDeposits(ctx.db)
    .where(
      and(
        eq(deposits.organizationId, organizationId),
        eq(deposits.depositReference, depositReference),
        inArray(transfers.protocol, protocols),
        sql`${deposits.status} <> 'dropped'`,
      ),
    )
    .orderBy(desc(deposits.detectedAt), desc(deposits.id))
    .limit(RECENT_DEPOSITS);
  return { ...summary, recentDeposits: rows.map((r) => depositFrom(ctx.registry, r)) };
}

export interface ReferenceListQuery {
  page: number;
  limit: number;
  depositReference?: string;
  protocol?: Protocol;
  search?: string;
  /** createdAt: when the reference was first bound (the default); depositReference: by name. */
  sortBy?: 'createdAt' | 'depositReference';
  sortOrder?: 'asc' | 'desc';
}

/** References with an open binding, newest first (by their first binding), ties by reference. */
export async function listDepositReferences(
  ctx: ServiceContext,
  organizationId: string,
  query: ReferenceListQuery,
): Promise<{ items: ReferenceSummary[]; total: number }> {
  const where = and(
    eq(depositBindings.organizationId, organizationId),
    isNull(depositBindings.unboundAt),
    query.protocol ? eq(depositBindings.protocol, query.protocol) : undefined,
    query.depositReference !== undefined ? eq(depositBindings.depositReference, query.depositReference) : undefined,
    query.search ? ilike(depositBindings.depositReference, `%${escapeLike(query.search)}%`) : undefined,
  );
  const [{ total }] = await ctx.db.select({ total: countDistinct(depositBindings.depositReference) }).from(depositBindings).where(where);
  const firstBound = min(depositBindings.createdAt);
  const firstBoundOrder = ctx.db
    .select({ depositReference: depositBindings.depositReference })
    .from(depositBindings)
    .where(where)
    .groupBy(depositBindings.depositReference)
    .orderBy(...referenceOrder(query, firstBound))
    .$dynamic();
  const page = await paginate(firstBoundOrder, query);
  const refs = page.map((r) => r.depositReference);
  const summaries = await summarize(ctx, organizationId, refs, query.protocol);
  const byRef = new Map(summaries.map((s) => [s.depositReference, s]));
  return { items: refs.map((r) => byRef.get(r)!).filter(Boolean), total: Number(total) };
}

/** The references' ORDER BY: by first binding (ties by name) or by name, in sortOrder. */
function referenceOrder(query: ReferenceListQuery, firstBound: SQL): SQL[] {
  const direction = query.sortOrder === 'asc' ? asc : desc;
  return query.sortBy === 'depositReference'
    ? [direction(depositBindings.depositReference)]
    : [direction(firstBound), direction(depositBindings.depositReference)];
}

async function summarize(ctx: ServiceContext, organizationId: string, refs: string[], protocol?: Protocol): Promise<ReferenceSummary[]> {
  if (refs.length === 0) return [];
  const rows = await ctx.db
    .select()
    .from(depositBindings)
    .where(
      openBindingsFilter(organizationId, refs, protocol),
    )
    .orderBy(asc(depositBindings.createdAt), asc(depositBindings.id));
  if (rows.length === 0) return [];
  const regs = await openRegistrations(ctx.db, rows.map((r) => r.id));
  const sums = await depositSums(ctx.db, organizationId, refs);

  const out: ReferenceSummary[] = [];
  for (const ref of refs) {
    const bindings = rows.filter((r) => r.depositReference === ref).map((r) => bindingView(ctx.registry, r, regs.get(r.id)));
    if (bindings.length === 0) continue;
    const totalsByProtocol: Partial<Record<Protocol, DepositTotals>> = {};
    for (const b of bindings) {
      totalsByProtocol[b.protocol] = totalsOf(ctx.registry, sums.filter((s) => s.depositReference === ref && s.protocol === b.protocol));
    }
    const protocols = new Set(bindings.map((b) => b.protocol));
    const totals = totalsOf(ctx.registry, sums.filter((s) => s.depositReference === ref && protocols.has(s.protocol as Protocol)));
    out.push({ depositReference: ref, bindings, totals, totalsByProtocol });
  }
  return out;
}

/** Credited deposits per reference, family, chain and currency, summed by Postgres in base units. */
async function depositSums(db: DbOrTx, organizationId: string, refs: string[]): Promise<(DepositSumRow & { depositReference: string; protocol: string })[]> {
  const rows = await db
    .select({
      depositReference: deposits.depositReference,
      protocol: transfers.protocol,
      chainId: transfers.chainId,
      currency: transfers.currency,
      count: count(),
      units: sql<string>`sum(${transfers.amount})::text`,
      lastDepositAt: sql<string | Date | null>`max(${deposits.detectedAt})`,
    })
    .from(deposits)
    .innerJoin(transfers, eq(transfers.id, deposits.transferId))
    .where(and(eq(deposits.organizationId, organizationId), inArray(deposits.depositReference, refs), inArray(deposits.status, CREDITED)))
    .groupBy(deposits.depositReference, transfers.protocol, transfers.chainId, transfers.currency);
  return rows.map((r) => ({
    ...r,
    count: Number(r.count),
    units: BigInt(r.units),
    lastDepositAt: r.lastDepositAt === null ? null : new Date(r.lastDepositAt),
  }));
}

export interface DepositListQuery {
  page: number;
  limit: number;
  sortBy: 'detectedAt' | 'amount' | 'confirmedAt';
  sortOrder: 'asc' | 'desc';
  depositReference?: string;
  status?: DepositStatus;
  currency?: string;
  chainId?: string;
}

/** The filters of GET /deposits (and of its CSV export, core/exports/). */
export type DepositFilters = Pick<DepositListQuery, 'depositReference' | 'status' | 'currency' | 'chainId'>;

/** The list's condition over deposits joined with their transfer (selectDeposits), the organization's first. */
export function depositFilterCondition(organizationId: string, query: DepositFilters): SQL | undefined {
  return and(
    eq(deposits.organizationId, organizationId),
    query.depositReference !== undefined ? eq(deposits.depositReference, query.depositReference) : undefined,
    query.status ? eq(deposits.status, query.status) : undefined,
    query.currency ? eq(transfers.currency, query.currency) : undefined,
    query.chainId ? eq(transfers.chainId, query.chainId) : undefined,
  );
}

export async function listDeposits(ctx: ServiceContext, organizationId: string, query: DepositListQuery): Promise<{ items: DepositRecord[]; total: number }> {
  const where = depositFilterCondition(organizationId, query);
  const [{ total }] = await ctx.db
    .select({ total: count() })
    .from(deposits)
    .innerJoin(transfers, eq(transfers.id, deposits.transferId))
    .where(where);
  const dir = query.sortOrder === 'asc' ? sql`asc` : sql`desc`;
  const key: SQL =
    query.sortBy === 'amount'
      ? sql`${faceValueSql({ amount: transfers.amount, chainId: transfers.chainId, currency: transfers.currency }, ctx.registry.knownTokens())} ${dir}`
      : query.sortBy === 'confirmedAt'
        ? sql`${deposits.confirmedAt} ${dir} nulls last`
        : sql`${deposits.detectedAt} ${dir}`;
  const rows = await paginate(selectDeposits(ctx.db).where(where).orderBy(key, sql`${deposits.id} ${dir}`).$dynamic(), query);
  return { items: rows.map((r) => depositFrom(ctx.registry, r)), total: Number(total) };
}

/** One deposit of the organization; unknown (or another organization's) is 404. */
export async function getDeposit(ctx: ServiceContext, organizationId: string, depositId: string): Promise<DepositRecord> {
  const [row] = await selectDeposits(ctx.db).where(and(eq(deposits.organizationId, organizationId), eq(deposits.id, depositId)));
  if (!row) throw new AppError('RESOURCE_NOT_FOUND', `Deposit ${depositId} not found`);
  return depositFrom(ctx.registry, row);
}
