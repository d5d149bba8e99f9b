import { and, asc, count, desc, eq, gte, inArray, lt, or, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import type { ServiceContext } from '../service/context';
import { depositBindings, deposits, orders, transfers } from '../../db/schema';
import { PROTOCOLS, type Protocol } from '../chains/registry';
import { classifySearch, type SearchTerm } from '../chains/search-term';
import { escapeLike, faceValueSql } from '../platform/sql-fragments';
import { normalizeAddress } from '../chains/addresses';
import { notFound } from '../platform/errors';
import { paginate } from '../platform/sql-fragments';
import { countedTotal, dayOfOffset } from '../platform/list-counts';

/**
 * Reading transfers (GET /transfers): the one record of on-chain token movements into pool
 * addresses (design.md §4). An organization sees the transfers into its own pool addresses,
 * attributed (to its orders or deposit references) or not; another tenant's are 404 / absent.
 */

/**
 * dropped: its block was orphaned before it was confirmed (never credited); reorged: confirmed,
 * then its block was orphaned deeper than the required confirmations (credit kept; back to
 * confirmed if the same transfer is mined again).
 */
export const TRANSFER_STATUSES = ['pending', 'confirmed', 'dropped', 'reorged'] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

export const TRANSFER_SORT_FIELDS = ['detectedAt', 'createdAt', 'amount', 'blockNumber', 'blockTimestamp', 'confirmedAt'] as const;
export type TransferSortField = (typeof TRANSFER_SORT_FIELDS)[number];

export interface ListTransfersQuery {
  page: number;
  limit: number;
  sortBy: TransferSortField;
  sortOrder: 'asc' | 'desc';
  status?: TransferStatus;
  currency?: string;
  chainId?: string;
  txHash?: string;
  address?: string;
  orderId?: string;
  depositReference?: string;
  /**
   * A search box's text (core/chains/search-term.ts): the order id it was credited to, its
   * transaction hash, its receiving address (any family), or else part of its order's or deposit's
   * reference. A malformed address is 400.
   */
  search?: string;
  /**
   * `?attributed=`: true, attributed to an order or a deposit reference; false, to nobody (what
   * arrived where nothing was expected: the dashboard's inbox asks the same).
   */
  attributed?: boolean;
  /** `?unattributedReason=`: unattributed for this reason (implies attributed=false). */
  unattributedReason?: UnattributedReason;
}

/**
 * no_holder: mined while nobody held the address; undecidable: the evidence cannot tell which side
 * of a hand-over; paid_late: mined after its order's grace, inside the organization's late-payment
 * window (late_payment_window_minutes): recorded against that order (paidLate), never credited automatically.
 */
export const UNATTRIBUTED_REASONS = ['no_holder', 'undecidable', 'paid_late'] as const;
export type UnattributedReason = (typeof UNATTRIBUTED_REASONS)[number];

const FIELDS = {
  t: transfers,
  orderReference: orders.orderReference,
  depositReference: depositBindings.depositReference,
  depositId: deposits.id,
};

/** Transfers joined with what they were attributed to; callers add the where clause (lists, exports). */
export function selectTransfers(db: DbOrTx) {
  return db
    .select(FIELDS)
    .from(transfers)
    .leftJoin(orders, eq(orders.id, transfers.orderId))
    .leftJoin(depositBindings, eq(depositBindings.id, transfers.depositBindingId))
    .leftJoin(deposits, eq(deposits.transferId, transfers.id));
}

/** A transfer as read: its row and what it was attributed to (core/views/transfer.ts presents it). */
export type TransferRecord = Awaited<ReturnType<ReturnType<typeof selectTransfers>['execute']>>[number];

export async function getTransfer(db: DbOrTx, organizationId: string, transferId: string): Promise<TransferRecord> {
  const [row] = await selectTransfers(db).where(and(eq(transfers.id, transferId), eq(transfers.organizationId, organizationId)));
  if (!row) throw notFound(`Transfer ${transferId}`);
  return row;
}

/**
 * The sort keys. Amounts of different tokens compare at face value (1 DAI, 18 decimals, equals 1
 * USDT, 6), over every token the registry knows, as the order and deposit lists sort them.
 */
function sortColumns(ctx: Pick<ServiceContext, 'registry'>) {
  return {
    detectedAt: transfers.detectedAt,
    // The spec's name for when the transfer was recorded: detectedAt.
    createdAt: transfers.detectedAt,
    amount: faceValueSql({ amount: transfers.amount, chainId: transfers.chainId, currency: transfers.currency }, ctx.registry.knownTokens()),
    blockNumber: transfers.blockNumber,
    blockTimestamp: transfers.blockTimestamp,
    confirmedAt: transfers.confirmedAt,
  } as const;
}

export async function listTransfers(
  ctx: Pick<ServiceContext, 'db' | 'registry'>,
  organizationId: string,
  q: ListTransfersQuery,
): Promise<{ items: TransferRecord[]; total: number }> {
  const { db } = ctx;
  const where = transferFilterConditions(organizationId, q);
  const filter = and(...where);
  const column = sortColumns(ctx)[q.sortBy];
  const direction = q.sortOrder === 'asc' ? asc : desc;
  // Only confirmedAt may be null (and sorts its nulls last either way). The others sort plainly,
  // so the default order, newest first, is (organization_id, created_at, id) read backwards: with
  // `nulls last` Postgres sorted every row of the organization (bench:scale; scripts/bench/FINDINGS.md).
  const order = [
    q.sortBy !== 'confirmedAt' ? direction(column) : q.sortOrder === 'asc' ? sql`${column} asc nulls last` : sql`${column} desc nulls last`,
    direction(transfers.id),
  ];
  // Filtered by organization and status at most: the trigger-kept counts answer exactly. Read from
  // the conditions themselves, so a filter added later can never be answered by those counts.
  const byStatusOnly = where.length === (q.status ? 2 : 1);
  const [rows, total] = await Promise.all([
    transferPage(db, organizationId, q, filter, byStatusOnly, column, order),
    byStatusOnly ? countedTotal(db, 'transfers', organizationId, q.status) : countMatching(db, filter),
  ]);
  return { items: rows, total };
}

/** The filters of GET /transfers (and of its CSV export, core/exports/): a subset of ListTransfersQuery. */
export type TransferFilters = Omit<ListTransfersQuery, 'page' | 'limit' | 'sortBy' | 'sortOrder'>;

/**
 * The list's conditions, the organization's first; `depositReference` reads the binding joined as
 * selectTransfers joins it. Built eagerly: a search text the list refuses throws here.
 */
export function transferFilterConditions(organizationId: string, q: TransferFilters): SQL[] {
  const where: SQL[] = [eq(transfers.organizationId, organizationId)];
  if (q.status) where.push(eq(transfers.status, q.status));
  if (q.currency) where.push(eq(transfers.currency, q.currency.toUpperCase()));
  if (q.chainId) where.push(eq(transfers.chainId, q.chainId));
  if (q.txHash) where.push(sql`lower(${transfers.txHash}) = ${q.txHash.toLowerCase()}`);
  if (q.address) where.push(addressFilter(q.address));
  if (q.orderId) where.push(eq(transfers.orderId, q.orderId));
  if (q.depositReference) where.push(eq(depositBindings.depositReference, q.depositReference));
  if (q.search !== undefined) where.push(searchCondition(organizationId, classifySearch(q.search)));
  // A refund's payment (refund_id) is the merchant's own outgoing payment: attributed, to its refund.
  const nobody = sql`${transfers.orderId} is null and ${transfers.depositBindingId} is null and ${transfers.refundId} is null`;
  if (q.attributed === false || q.unattributedReason) where.push(nobody);
  if (q.attributed === true) where.push(sql`not (${nobody})`);
  if (q.unattributedReason) where.push(eq(transfers.unattributedReason, q.unattributedReason));
  return where;
}

/**
 * One offset page. The page's ids first, from the index alone where it serves the filter and
 * order (the offset is skipped in the index), then only those transfers are read and joined.
 * Deep in detectedAt order, filtered by status at most, the offset is skipped from the edge of
 * the day the page starts in (the kept counts per day say which), not from the list's head.
 */
async function transferPage(db: DbOrTx, organizationId: string, q: ListTransfersQuery, filter: SQL | undefined, byStatusOnly: boolean, column: unknown, order: SQL[]) {
  const ids = q.depositReference
    ? db.select({ id: transfers.id }).from(transfers).leftJoin(depositBindings, eq(depositBindings.id, transfers.depositBindingId))
    : db.select({ id: transfers.id }).from(transfers);
  let pageIds;
  const offset = (q.page - 1) * q.limit;
  if (byStatusOnly && column === transfers.detectedAt && offset > 0) {
    const start = await dayOfOffset(db, 'transfers', organizationId, q.status, q.sortOrder, offset);
    if (!start) return [];
    const fromDay = q.sortOrder === 'desc' ? lt(transfers.detectedAt, start.from) : gte(transfers.detectedAt, start.from);
    pageIds = ids.where(and(filter, fromDay)).orderBy(...order).limit(q.limit).offset(start.skip);
  } else {
    pageIds = paginate(ids.where(filter).orderBy(...order).$dynamic(), q);
  }
  return selectTransfers(db).where(inArray(transfers.id, pageIds)).orderBy(...order);
}

async function countMatching(db: DbOrTx, filter: SQL | undefined): Promise<number> {
  const [{ total }] = await db
    .select({ total: count() })
    .from(transfers)
    .leftJoin(depositBindings, eq(depositBindings.id, transfers.depositBindingId))
    .where(filter);
  return total;
}

/**
 * `?address=`: transfers store the recipient in its family's normalised form (normalizeAddress),
 * so the filter normalises the text under each family that accepts it and compares exactly. EVM
 * matches in any case; a base58 address (Tron, Solana) is case-sensitive: another case is another
 * (usually invalid) address and matches nothing.
 */
function addressFilter(text: string): SQL {
  return toAddressIn(PROTOCOLS.flatMap((protocol) => {
    const address = normalizeAddress(protocol, text);
    return address === null ? [] : [{ protocol, address }];
  }));
}

function toAddressIn(forms: { protocol: Protocol; address: string }[]): SQL {
  return forms.length === 0 ? sql`false` : or(...forms.map((f) => and(eq(transfers.protocol, f.protocol), eq(transfers.toAddress, f.address))))!;
}

/** The transfers a search term finds: credited to the order, of the transaction, to the address, by reference. */
function searchCondition(organizationId: string, term: SearchTerm): SQL {
  switch (term.kind) {
    case 'orderId':
      return eq(transfers.orderId, term.orderId);
    case 'txHash':
      return inArray(transfers.txHash, term.forms);
    case 'address':
      return toAddressIn(term.forms);
    case 'reference': {
      // Subqueries, not the list's joins: the page's ids and the count read transfers alone.
      const pattern = `%${escapeLike(term.text)}%`;
      const byOrder = sql`select ${orders.id} from ${orders} where ${orders.organizationId} = ${organizationId} and ${orders.orderReference} ilike ${pattern} escape '\\'`;
      const byDeposit = sql`select ${depositBindings.id} from ${depositBindings} where ${depositBindings.organizationId} = ${organizationId} and ${depositBindings.depositReference} ilike ${pattern} escape '\\'`;
      return sql`(${transfers.orderId} in (${byOrder}) or ${transfers.depositBindingId} in (${byDeposit}))`;
    }
  }
}
