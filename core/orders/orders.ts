import { and, asc, count, desc, eq, gte, inArray, lt, or, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { columnsReader, prepareStatement, type DbOrTx } from '../../db/client';
import { orders, poolAddresses, transfers } from '../../db/schema';
import { parseAmount } from '../platform/amounts';
import type { ServiceContext } from '../service/context';
import { AppError, isUniqueViolation, notFound, postgresError, validationError } from '../platform/errors';
import { newId } from '../platform/ids';
import { decimalConfigSql, getConfigValue, integerConfigSql, isHttpUrl, MAX_ORDER_AMOUNT_KEY } from '../organizations/org-config';
import { AFTER_PLACEHOLDERS, takeAddressCtes, takeAddressesForOrdersCtes, takeWithCooledDownRetry, type AllocationPoint } from '../pool/allocation';
import { assertNoSeedPhrase } from '../pool/secret-scan';
import { countOrderCreationStatement, countOrderTransition } from '../platform/metrics';
import type { Protocol } from '../chains/registry';
import { classifySearch, type SearchTerm } from '../chains/search-term';
import type { OrderException, OrderRow, PaymentState, TokenOrderRow } from '../views/order';
import { chainConfirmations, requiredConfirmationsSql } from '../chains/confirmation-policy';
import { newPayToken } from './pay-token';
import { assertNoLinkClaim, PAYMENT_LINK_ID_KEY } from './link-units';
import { ALONE, ORDER_BATCH_MAX, type CreatedRow, type CreateOrderStatementValues, type OrderCreation, type OrderCreationOutcome } from '../service/order-memory';
import { paymentStateCondition } from './payment-state';
import { exceptionCondition } from './exceptions';
import { escapeLike, faceValueSql, paginate } from '../platform/sql-fragments';
import { countedTotal, dayOfOffset } from '../platform/list-counts';

/** Bounds of the order inputs (also in the request schema, which documents them). */
export const PAYMENT_WINDOW_MINUTES = { min: 1, max: 10_080, fallback: 10 } as const;
export const GRACE_MINUTES = { min: 0, max: 1_440, fallback: 5 } as const;
export const ORDER_REFERENCE_MAX = 255;

export interface CreateOrderInput {
  orderReference: string;
  /** Decimal string; anything else is INVALID_AMOUNT. */
  amount: unknown;
  currency: string;
  chainId: string;
  successUrl?: string;
  cancelUrl?: string;
  metadata?: Record<string, unknown>;
  paymentWindowMinutes?: number;
  graceMinutes?: number;
}

export const duplicateReference = (orderReference: string, existingOrderId: string) =>
  new AppError('DUPLICATE_ORDER_REFERENCE', `An order with orderReference "${orderReference}" already exists`, undefined, { existingOrderId });

/**
 * Creates an order: validates everything first (chain, currency, amount, URLs, window), then in one
 * statement takes a pool address of the chain's protocol for the new order id and inserts the
 * order. A failure anywhere stores and allocates nothing. A concurrent creation with the same
 * reference loses on the unique index and answers 409 like a sequential one.
 * `fromLink` (checkout only): the order is made from that payment link: its payment_link_id, and
 * the link's id in its metadata for information. The insert then takes one of the link's units or
 * fails whole (core/orders/link-units.ts). The caller's metadata may not name a link.
 */
export async function createOrder(
  ctx: ServiceContext,
  organizationId: string,
  input: CreateOrderInput,
  fromLink?: { paymentLinkId: string },
): Promise<TokenOrderRow> {
  const chain = ctx.registry.requireOfferedChain(input.chainId);
  const token = ctx.registry.requireToken(chain, input.currency);
  const amount = parseAmount(input.amount, token.decimals);
  const { graceMinutes, paymentLinkId, metadata } = checkedOrderTerms(input, fromLink);

  const now = ctx.clock.now();
  const values: CreateOrderStatementValues = {
    id: newId('ord'),
    organizationId,
    orderReference: input.orderReference,
    payToken: newPayToken(),
    amount: amount.toString(),
    currency: token.currency,
    chainId: chain.chainId,
    protocol: chain.protocol,
    successUrl: input.successUrl ?? null,
    cancelUrl: input.cancelUrl ?? null,
    metadata: JSON.stringify(metadata),
    paymentLinkId,
    paymentWindowMinutes: input.paymentWindowMinutes ?? null,
    graceMinutes,
    chainConfirmations: chainConfirmations(chain, 'order'),
    tokenDecimals: token.decimals,
    now: now.toISOString(),
  };
  try {
    // No reference pre-check on the way in: the unique index orders_org_reference_uq decides
    // (sequential and concurrent duplicates alike) and saves a round trip on every creation.
    const created = await takeWithCooledDownRetry(ctx.db, { organizationId, protocol: chain.protocol, now }, () => createWithAddress(ctx, values, metadata));
    const order = storedOrder(values, { amount, metadata, now }, created);
    countOrderTransition('pending');
    return order;
  } catch (err) {
    // Nothing was stored or allocated. An amount above the organization's maximum is refused by
    // the statement itself (no read of its own on the way in); with an empty pool the statement
    // never reached the check, so it is made here, where the creation failed anyway.
    const refusedMaximum = postgresError(err, 'SGA01');
    if (refusedMaximum) throw aboveMaximum(refusedMaximum.detail);
    if (err instanceof AppError && err.code === 'NO_AVAILABLE_ADDRESSES') await assertWithinMaximum(ctx.db, organizationId, amount, token.decimals);
    // A duplicate reference is 409 even when the pool is also empty (the allocation found nothing
    // before the insert could say so).
    const duplicate =
      isUniqueViolation(err, 'orders_org_reference_uq') || (err instanceof AppError && err.code === 'NO_AVAILABLE_ADDRESSES');
    if (duplicate) {
      const existing =
        (await findIdByReference(ctx.db, organizationId, input.orderReference)) ??
        (err instanceof AppError ? await findIdAfterAllocationsInFlight(ctx.db, organizationId, chain.protocol, input.orderReference) : null);
      if (existing) throw duplicateReference(input.orderReference, existing);
    }
    throw err;
  }
}

/**
 * What every order creation checks and derives alike (token and USD orders, core/orders/routes.ts):
 * no seed phrase, no link claim in the caller's metadata, absolute redirect URLs; the grace, and
 * the metadata with the payment link's id when made from one.
 */
export function checkedOrderTerms(
  input: Pick<CreateOrderInput, 'orderReference' | 'metadata' | 'successUrl' | 'cancelUrl' | 'graceMinutes'>,
  fromLink: { paymentLinkId: string } | undefined,
): { graceMinutes: number; paymentLinkId: string | null; metadata: Record<string, unknown> } {
  assertNoSeedPhrase({ orderReference: input.orderReference, metadata: input.metadata });
  assertNoLinkClaim(input.metadata);
  for (const field of ['successUrl', 'cancelUrl'] as const) {
    const url = input[field];
    if (url !== undefined && !isHttpUrl(url)) {
      throw validationError(`${field} must be an absolute http(s) URL`, [{ field, message: 'must be an absolute http(s) URL' }]);
    }
  }
  // paymentWindowMinutes and graceMinutes are bounded once, by the request schema
  // (api/routes/orders.routes.ts, from PAYMENT_WINDOW_MINUTES and GRACE_MINUTES); the
  // organization's payment_window_minutes was bounded when it was set, and the statement reads it.
  const paymentLinkId = fromLink?.paymentLinkId ?? null;
  return {
    graceMinutes: input.graceMinutes ?? GRACE_MINUTES.fallback,
    paymentLinkId,
    metadata: paymentLinkId === null ? (input.metadata ?? {}) : { ...input.metadata, [PAYMENT_LINK_ID_KEY]: paymentLinkId },
  };
}

export const aboveMaximum = (maximum: string | undefined) =>
  new AppError(
    'INVALID_AMOUNT',
    `amount is above this organization's maximum order amount${maximum ? ` of ${maximum}` : ''} (configuration key ${MAX_ORDER_AMOUNT_KEY}): amounts are in token units, e.g. "10.50", not base units`,
    [{ field: 'amount', message: `is above the maximum order amount${maximum ? ` of ${maximum}` : ''} (token units, not base units)` }],
    maximum ? { maxAmount: maximum } : undefined,
  );

/** The statement's check made alone (the empty-pool path, where the statement took nothing to check). */
export async function assertWithinMaximum(db: DbOrTx, organizationId: string, amount: bigint, decimals: number): Promise<void> {
  const maximum = await getConfigValue<string>(db, organizationId, MAX_ORDER_AMOUNT_KEY);
  // Both at the finer of the two scales (the maximum may have more decimals than the token).
  const [whole, fraction = ''] = maximum.split('.');
  const scale = Math.max(decimals, fraction.length);
  if (amount * 10n ** BigInt(scale - decimals) > BigInt(whole + fraction.padEnd(scale, '0'))) throw aboveMaximum(maximum);
}

/**
 * True when the order's amount (base units) is at most the organization's max_order_amount (token
 * units); otherwise refuse_order_amount (db/migrations/0022_organization_settings.sql) aborts the
 * statement with SGA01, so nothing is taken or stored. A CASE, so the refusal runs only on its branch.
 */
const withinMaximumSql = (amount: SQL, decimals: SQL, maximum: SQL): SQL =>
  sql`case when ${amount} <= ${maximum} * 10::numeric ^ ${decimals} then true else refuse_order_amount(${maximum}) end`;

const value = (name: keyof CreateOrderStatementValues) => sql.placeholder(name);

/** The columns both creation statements (lone and batch) insert into `orders`, in their order. */
const ORDER_INSERT_COLUMNS = sql.raw(`(id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol,
      address, pool_address_id, status, success_url, cancel_url, metadata, payment_link_id, payment_window_minutes, grace_minutes,
      required_confirmations, expires_at, grace_ends_at, created_at, updated_at)`);
/**
 * What the creation statements decide and return (CreatedRow): the window, the confirmations and
 * the deadlines, computed once, by Postgres, from the same instant.
 */
const DECIDED = ['payment_window_minutes', 'required_confirmations', 'expires_at', 'grace_ends_at'] as const;
const ORDER_DECIDED_COLUMNS = sql.raw(DECIDED.join(', '));
const ORDER_DECIDED_OF_C = sql.raw(DECIDED.map((c) => `c.${c}`).join(', '));
const readDeadlines = columnsReader(orders, ['expiresAt', 'graceEndsAt']).read;

/** An order's deadlines, expires_at and grace_ends_at (in that order), from its creation instant, window and grace. */
const deadlinesSql = (now: SQL, windowMinutes: SQL, graceMinutes: SQL): SQL =>
  sql`${now} + make_interval(mins => ${windowMinutes}), ${now} + make_interval(mins => ${windowMinutes} + ${graceMinutes})`;

/**
 * The order, its pool address and the address's assignment in one statement: one round trip and
 * atomic without an explicit transaction (a statement commits whole or not at all). The window
 * default and the required confirmations are read from the organization's configuration inside
 * it (settings is materialized: inlined, the window's lookup ran once for each of its three uses).
 * It returns only what Postgres decided (the address, the window, the confirmations); the rest of
 * the stored row is the values bound (storedOrder): every returned column costs Postgres an
 * output conversion and the API a parse (the whole row was a tenth of the statement's CPU time).
 * Built once; every creation runs it as a prepared statement.
 * Hand-written because its speed is its shape: data-modifying CTEs chained in one statement, the
 * allocation's row-value range condition that matches pool_addresses_allocation_idx, each value bound
 * once, and prepared once per connection; the query builder would rebuild it on every call and
 * cannot chain them so. Its text is snapshotted (test/foundation/hand-written-sql.test.ts).
 */
const createOrderStatement = prepareStatement<CreateOrderStatementValues & AllocationPoint>('orders.create_with_address', sql`
  with settings as materialized (
    select coalesce(${value('paymentWindowMinutes')}::int, ${integerConfigSql(value('organizationId'), 'payment_window_minutes')},
                    ${PAYMENT_WINDOW_MINUTES.fallback}::int) as payment_window_minutes,
           ${requiredConfirmationsSql(value('organizationId'), value('chainConfirmations'), 'order')} as required_confirmations,
           ${decimalConfigSql(value('organizationId'), MAX_ORDER_AMOUNT_KEY)} as max_order_amount
  ), ${takeAddressCtes({
    organizationId: value('organizationId'),
    protocol: value('protocol'),
    kind: 'order',
    holderId: value('id'),
    now: value('now'),
    after: AFTER_PLACEHOLDERS,
  })},
  created as (
    insert into orders ${ORDER_INSERT_COLUMNS}
    select ${value('id')}, ${value('organizationId')}, ${value('orderReference')}, ${value('payToken')}, ${value('amount')}::numeric, 0, ${value('currency')},
      ${value('chainId')}, ${value('protocol')}, t.address, t.id, 'pending', ${value('successUrl')}::text, ${value('cancelUrl')}::text,
      ${value('metadata')}::jsonb, ${value('paymentLinkId')}::text, s.payment_window_minutes, ${value('graceMinutes')}::int, s.required_confirmations,
      ${deadlinesSql(sql`${value('now')}::timestamptz`, sql`s.payment_window_minutes`, sql`${value('graceMinutes')}::int`)},
      ${value('now')}::timestamptz, ${value('now')}::timestamptz
    from taken t cross join settings s
    where ${withinMaximumSql(sql`${value('amount')}::numeric`, sql`${value('tokenDecimals')}::int`, sql`s.max_order_amount`)}
    returning ${ORDER_DECIDED_COLUMNS}
  )
  select t.id as pool_address_id, t.address, t.pool_created_at, t.pool_recycled_at, ${ORDER_DECIDED_OF_C}
  from created c cross join taken t`);

/**
 * Through the group commit of order creations (core/service/order-memory.ts says how they batch).
 * Null when the pool had no available address (nothing was written).
 */
async function createWithAddress(ctx: Pick<ServiceContext, 'db' | 'memory'>, values: CreateOrderStatementValues, metadata: Record<string, unknown>): Promise<CreatedRow | null> {
  const outcome = await ctx.memory.orderCreations.submit(`${values.organizationId}:${values.protocol}`, { values, metadata }, (batch) =>
    runCreations(ctx, batch),
  );
  return outcome === ALONE ? insertOrderWithAddress(ctx, values) : outcome;
}

async function runCreations(ctx: Pick<ServiceContext, 'db' | 'memory'>, batch: OrderCreation[]): Promise<OrderCreationOutcome[]> {
  if (batch.length === 1) {
    const row = await insertOrderWithAddress(ctx, batch[0].values);
    countOrderCreationStatement(1, 'committed');
    return [row];
  }
  const first = batch[0].values;
  try {
    const rows = await ctx.memory.allocationHints.takeSeveral(
      { organizationId: first.organizationId, protocol: first.protocol },
      (after) => createOrdersStatements[batch.length].run<CreatedRow & { n: number }>(ctx.db, { ...batchValues(batch), ...after }),
      takenOf,
    );
    countOrderCreationStatement(batch.length, 'committed');
    const byRank = new Map(rows.map((row) => [Number(row.n), row]));
    return batch.map((_, i) => byRank.get(i + 1) ?? ALONE);
  } catch {
    countOrderCreationStatement(batch.length, 'failed');
    return batch.map(() => ALONE);
  }
}

/** The batch's creations as one JSON parameter (rank n from 1, in arrival order); see createOrdersStatement. */
function batchValues(batch: OrderCreation[]): CreateOrdersStatementValues {
  const first = batch[0].values;
  const orders = batch.map(({ values: v, metadata }, i) => ({
    n: i + 1,
    id: v.id,
    now: v.now,
    order_reference: v.orderReference,
    pay_token: v.payToken,
    amount: v.amount,
    currency: v.currency,
    chain_id: v.chainId,
    success_url: v.successUrl,
    cancel_url: v.cancelUrl,
    metadata,
    payment_link_id: v.paymentLinkId,
    payment_window_minutes: v.paymentWindowMinutes,
    grace_minutes: v.graceMinutes,
    chain_confirmations: v.chainConfirmations,
    token_decimals: v.tokenDecimals,
  }));
  return { organizationId: first.organizationId, protocol: first.protocol, orders: JSON.stringify(orders) };
}

const takenOf = (taken: CreatedRow) => ({ id: Number(taken.pool_address_id), createdAt: taken.pool_created_at, recycledAt: taken.pool_recycled_at });

type CreateOrdersStatementValues = { organizationId: string; protocol: Protocol; orders: string };

/**
 * createOrderStatement for `count` orders of one organization and protocol (2 to ORDER_BATCH_MAX):
 * the orders come as one JSON array (ranks 1..count in arrival order), each takes the address of
 * its rank in allocation order (takeAddressesForOrdersCtes) and is inserted with it; an order the
 * pool had no address for is not inserted and has no row in the result. One statement per count,
 * each prepared once per connection, built when this module loads.
 */
function createOrdersStatement(count: number) {
  const organizationId = value('organizationId');
  return prepareStatement<CreateOrdersStatementValues & AllocationPoint>(`orders.create_${count}_with_addresses`, sql`
  with input as materialized (
    select * from json_to_recordset(${sql.placeholder('orders')}::json) as i(n int, id text, now timestamptz, order_reference text, pay_token text,
      amount numeric, currency text, chain_id text, success_url text, cancel_url text, metadata jsonb, payment_link_id text, payment_window_minutes int,
      grace_minutes int, chain_confirmations int, token_decimals int)
  ), settings as materialized (
    select coalesce(${integerConfigSql(organizationId, 'payment_window_minutes')}, ${PAYMENT_WINDOW_MINUTES.fallback}::int) as payment_window_minutes,
           ${decimalConfigSql(organizationId, MAX_ORDER_AMOUNT_KEY)} as max_order_amount
  ), ${takeAddressesForOrdersCtes({ organizationId, protocol: value('protocol'), count, orders: sql`input`, after: AFTER_PLACEHOLDERS })},
  created as (
    insert into orders ${ORDER_INSERT_COLUMNS}
    select i.id, ${organizationId}, i.order_reference, i.pay_token, i.amount, 0, i.currency, i.chain_id, ${value('protocol')}, t.address, t.id, 'pending',
      i.success_url, i.cancel_url, i.metadata, i.payment_link_id, w.minutes, i.grace_minutes, ${requiredConfirmationsSql(organizationId, sql`i.chain_confirmations`, 'order')},
      ${deadlinesSql(sql`i.now`, sql`w.minutes`, sql`i.grace_minutes`)}, i.now, i.now
    from taken t join input i on i.n = t.n cross join settings s
      cross join lateral (select coalesce(i.payment_window_minutes, s.payment_window_minutes) as minutes) w
    where ${withinMaximumSql(sql`i.amount`, sql`i.token_decimals`, sql`s.max_order_amount`)}
    returning id, ${ORDER_DECIDED_COLUMNS}
  )
  select i.n, t.id as pool_address_id, t.address, t.pool_created_at, t.pool_recycled_at, ${ORDER_DECIDED_OF_C}
  from taken t join input i on i.n = t.n join created c on c.id = i.id
  order by i.n`);
}

const createOrdersStatements: Readonly<Record<number, ReturnType<typeof createOrdersStatement>>> = Object.fromEntries(
  Array.from({ length: ORDER_BATCH_MAX - 1 }, (_, i) => [i + 2, createOrdersStatement(i + 2)]),
);

/** Null when the pool had no available address (nothing was written). */
async function insertOrderWithAddress(ctx: Pick<ServiceContext, 'db' | 'memory'>, values: CreateOrderStatementValues): Promise<CreatedRow | null> {
  // From where this context's order creations stand in the pool's allocation order.
  return ctx.memory.allocationHints.take(
    { organizationId: values.organizationId, protocol: values.protocol },
    async (after) => {
      try {
        return (await createOrderStatement.run<CreatedRow>(ctx.db, { ...values, ...after }))[0] ?? null;
      } catch (err) {
        // The order's id was made once, before any try: a collision on it means a batch that held
        // this creation committed and its answer was lost with its connection (runCreations then
        // tries each alone). The order exists: answer it, rather than a 500 for a stored order.
        if (!isUniqueViolation(err, 'orders_pkey')) throw err;
        const [stored] = await createdOrderById.run<CreatedRow>(ctx.db, { id: values.id, organizationId: values.organizationId });
        if (!stored) throw err;
        return stored;
      }
    },
    takenOf,
  );
}

/** What a creation statement returns (CreatedRow), read back for an order it stored. */
const createdOrderById = prepareStatement<{ id: string; organizationId: string }>('orders.created_by_id', sql`
  select p.id as pool_address_id, o.address, p.created_at::text as pool_created_at, p.recycled_at::text as pool_recycled_at,
         o.payment_window_minutes, o.required_confirmations, o.expires_at, o.grace_ends_at
  from orders o join pool_addresses p on p.id = o.pool_address_id
  where o.id = ${sql.placeholder('id')} and o.organization_id = ${sql.placeholder('organizationId')}`);

/**
 * The order row as the creation statement stored it: the values it bound (`amount`, `metadata`
 * and `now` as the values they were made from) and what Postgres decided (the address, the
 * window, the confirmations, the deadlines).
 */
function storedOrder(values: CreateOrderStatementValues, made: { amount: bigint; metadata: Record<string, unknown>; now: Date }, created: CreatedRow): TokenOrderRow {
  const windowMinutes = Number(created.payment_window_minutes);
  const { expiresAt, graceEndsAt } = readDeadlines(created);
  return {
    id: values.id,
    organizationId: values.organizationId,
    orderReference: values.orderReference,
    payToken: values.payToken,
    amount: made.amount,
    amountReceived: 0n,
    currency: values.currency,
    chainId: values.chainId,
    protocol: values.protocol,
    address: created.address,
    poolAddressId: Number(created.pool_address_id),
    status: 'pending',
    successUrl: values.successUrl,
    cancelUrl: values.cancelUrl,
    metadata: made.metadata,
    paymentLinkId: values.paymentLinkId,
    paymentWindowMinutes: windowMinutes,
    graceMinutes: values.graceMinutes,
    requiredConfirmations: Number(created.required_confirmations),
    expiresAt,
    graceEndsAt,
    txHash: null,
    blockNumber: null,
    confirmations: null,
    completedAt: null,
    expiredAt: null,
    createdAt: made.now,
    updatedAt: made.now,
    resolution: null,
    resolvedBy: null,
    resolvedAt: null,
    resolutionReason: null,
    lateWindowEndsAt: null,
    latePaidAt: null,
    unattributedPayments: 0,
    amountRefunded: 0n,
    routes: null,
    chosenRoutes: null,
    routeCurrency: null,
  };
}

/**
 * Waits between looks for a competing creation still in flight (milliseconds; about 3.4 s in all).
 * A fixed 0.4 s lost to a winner slower than that (its order committed after 0.5 s).
 */
const IN_FLIGHT_RECHECKS_MS = [10, 20, 40, 80, 150, 250, 400, 600, 900, 900];

/**
 * The duplicate-reference race on an exhausted pool (issue 32: 3 in 180 races answered 503): the
 * creation that lost to a concurrent one with the same reference found the pool empty because
 * the other held its last address (skip locked), before that one committed; its order is not yet
 * visible. While any of the pool's addresses still reads as available (taken by a creation not yet
 * committed: an empty pool has none), the reference is looked up again a little later, so the
 * answer is the 409 it is. It only reads: locking those addresses to wait for their holders would
 * make concurrent creations skip the free ones it locked on the way (a false 503). On the
 * empty-pool path only; a pool that reads as empty answers at once.
 */
async function findIdAfterAllocationsInFlight(db: DbOrTx, organizationId: string, protocol: Protocol, orderReference: string): Promise<string | null> {
  for (const waitMs of IN_FLIGHT_RECHECKS_MS) {
    const [{ n }] = await db
      .select({ n: count() })
      .from(poolAddresses)
      .where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, protocol), eq(poolAddresses.status, 'available')));
    if (n === 0) return findIdByReference(db, organizationId, orderReference);
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    const existing = await findIdByReference(db, organizationId, orderReference);
    if (existing) return existing;
  }
  return null;
}

export async function findIdByReference(db: DbOrTx, organizationId: string, orderReference: string): Promise<string | null> {
  const [row] = await db
    .select({ id: orders.id })
    .from(orders)
    .where(and(eq(orders.organizationId, organizationId), eq(orders.orderReference, orderReference)));
  return row?.id ?? null;
}

/** One of the organization's orders; another organization's id is 404. */
export async function getOrder(db: DbOrTx, organizationId: string, orderId: string): Promise<OrderRow> {
  const [row] = await db.select().from(orders).where(and(eq(orders.organizationId, organizationId), eq(orders.id, orderId)));
  if (!row) throw notFound('Order');
  return row;
}

export async function getOrderByReference(db: DbOrTx, organizationId: string, orderReference: string): Promise<OrderRow> {
  const [row] = await db
    .select()
    .from(orders)
    .where(and(eq(orders.organizationId, organizationId), eq(orders.orderReference, orderReference)));
  if (!row) throw notFound('Order');
  return row;
}

export const ORDER_SORT_FIELDS = ['createdAt', 'amount', 'expiresAt'] as const;
export type OrderSortField = (typeof ORDER_SORT_FIELDS)[number];

export interface ListOrdersQuery {
  page: number;
  limit: number;
  sortBy: OrderSortField;
  sortOrder: 'asc' | 'desc';
  status?: 'pending' | 'completed' | 'expired';
  currency?: string;
  chainId?: string;
  /** Substring search, case-insensitive; % and _ match themselves. */
  orderReference?: string;
  /** Derived payment state (core/views/order.ts paymentStateOf), e.g. `partial`. */
  paymentState?: PaymentState;
  /** An exception (core/views/order.ts orderExceptions), e.g. `paidLate`. */
  exception?: OrderException;
  /**
   * A search box's text (core/chains/search-term.ts): an order id, a payment's transaction hash,
   * the order's payment address (any family), or else part of the reference. A malformed address
   * is 400.
   */
  search?: string;
  /**
   * Keyset paging instead of `page` (sortBy createdAt only): the page that follows (`after`) or
   * precedes (`before`) this order in the sort. Deep pages of a large organization cost what the
   * first does, where an offset reads and discards every row before it.
   */
  cursor?: { after: string } | { before: string };
  /**
   * Count at most this many matches (the answer says whether there are more). The API's
   * pagination contract counts exactly; a page a person reads says "more than N" instead of
   * counting 100,000 rows on every click.
   */
  countUpTo?: number;
}

export interface OrderList {
  items: OrderRow[];
  total: number;
  /** True when `countUpTo` stopped the count: there are more than `total` matches. */
  totalCapped: boolean;
}

/** Amounts compared at face value across tokens (core/platform/sql-fragments.ts). */
function amountAtFaceValue(ctx: Pick<ServiceContext, 'registry'>): SQL {
  return faceValueSql({ amount: orders.amount, chainId: orders.chainId, currency: orders.currency }, ctx.registry.knownTokens());
}

export async function listOrders(
  ctx: Pick<ServiceContext, 'db' | 'registry'>,
  organizationId: string,
  query: ListOrdersQuery,
): Promise<OrderList> {
  const conditions = orderFilterConditions(organizationId, query);
  const where = and(...conditions);
  // Filtered by organization and status at most: the trigger-kept counts answer exactly. Read from
  // the conditions themselves, so a filter added later can never be answered by those counts.
  const byStatusOnly = conditions.length === (query.status ? 2 : 1);
  const counted = byStatusOnly ? countedTotal(ctx.db, 'orders', organizationId, query.status).then((n) => capped(n, query.countUpTo)) : countOrders(ctx, where, query.countUpTo);
  if (query.cursor) {
    if (query.sortBy !== 'createdAt') throw validationError('Cursor paging sorts by createdAt');
    const [items, total] = await Promise.all([ordersBeside(ctx, organizationId, where, query.sortOrder, query.cursor, query.limit), counted]);
    return { items, ...total };
  }
  const sortColumn: SQL | AnyPgColumn =
    query.sortBy === 'amount' ? amountAtFaceValue(ctx) : query.sortBy === 'expiresAt' ? orders.expiresAt : orders.createdAt;
  const direction = query.sortOrder === 'asc' ? asc : desc;
  const order = [direction(sortColumn), direction(orders.id)];
  const [items, total] = await Promise.all([orderPage(ctx, organizationId, query, where, byStatusOnly, order), counted]);
  return { items, ...total };
}

/** The filters of GET /orders (and of its CSV export, core/exports/): a subset of ListOrdersQuery. */
export type OrderFilters = Pick<ListOrdersQuery, 'status' | 'currency' | 'chainId' | 'orderReference' | 'paymentState' | 'exception' | 'search'>;

/**
 * The list's conditions, the organization's first. Built eagerly: a search text the list refuses
 * throws here, before any answer starts.
 */
export function orderFilterConditions(organizationId: string, filters: OrderFilters): SQL[] {
  const conditions: SQL[] = [eq(orders.organizationId, organizationId)];
  if (filters.status) conditions.push(eq(orders.status, filters.status));
  if (filters.currency) conditions.push(eq(orders.currency, filters.currency));
  if (filters.chainId) conditions.push(eq(orders.chainId, filters.chainId));
  if (filters.paymentState) conditions.push(paymentStateCondition(filters.paymentState));
  if (filters.exception) conditions.push(exceptionCondition(filters.exception));
  if (filters.orderReference) conditions.push(referenceContains(filters.orderReference));
  if (filters.search !== undefined) conditions.push(searchCondition(organizationId, classifySearch(filters.search)));
  return conditions;
}

const referenceContains = (text: string): SQL => sql`${orders.orderReference} ilike ${`%${escapeLike(text)}%`} escape '\\'`;

/** The orders a search term finds: by id, by a payment's transaction, by payment address, by reference. */
function searchCondition(organizationId: string, term: SearchTerm): SQL {
  switch (term.kind) {
    case 'orderId':
      return eq(orders.id, term.orderId);
    case 'txHash': {
      // Through transfers_tx_idx: the hash's stored forms compared exactly.
      const paid = sql`select ${transfers.orderId} from ${transfers} where ${transfers.organizationId} = ${organizationId} and ${inArray(transfers.txHash, term.forms)} and ${transfers.orderId} is not null`;
      return sql`${orders.id} in (${paid})`;
    }
    case 'address':
      return or(...term.forms.map((f) => and(eq(orders.protocol, f.protocol), eq(orders.address, f.address))))!;
    case 'reference':
      return referenceContains(term.text);
  }
}

/**
 * One offset page. The page's ids first (in createdAt order an index-only scan: the offset is
 * skipped in the index, not in the table), then those rows. Deep in createdAt order, filtered by
 * status at most, the offset is skipped from the edge of the day the page starts in (the kept
 * counts per day say which), not from the list's head.
 */
async function orderPage(
  ctx: Pick<ServiceContext, 'db'>,
  organizationId: string,
  query: ListOrdersQuery,
  where: SQL | undefined,
  byStatusOnly: boolean,
  order: SQL[],
): Promise<OrderRow[]> {
  const ids = ctx.db.select({ id: orders.id }).from(orders);
  let pageIds;
  const offset = (query.page - 1) * query.limit;
  if (byStatusOnly && query.sortBy === 'createdAt' && offset > 0) {
    const start = await dayOfOffset(ctx.db, 'orders', organizationId, query.status, query.sortOrder, offset);
    if (!start) return [];
    const fromDay = query.sortOrder === 'desc' ? lt(orders.createdAt, start.from) : gte(orders.createdAt, start.from);
    pageIds = ids.where(and(where, fromDay)).orderBy(...order).limit(query.limit).offset(start.skip);
  } else {
    pageIds = paginate(ids.where(where).orderBy(...order).$dynamic(), query);
  }
  return ctx.db.select().from(orders).where(inArray(orders.id, pageIds)).orderBy(...order);
}

function capped(total: number, upTo: number | undefined): { total: number; totalCapped: boolean } {
  return upTo === undefined || total <= upTo ? { total, totalCapped: false } : { total: upTo, totalCapped: true };
}

async function countOrders(ctx: Pick<ServiceContext, 'db'>, where: SQL | undefined, upTo: number | undefined): Promise<{ total: number; totalCapped: boolean }> {
  if (upTo === undefined) {
    const [{ total }] = await ctx.db.select({ total: count() }).from(orders).where(where);
    return { total, totalCapped: false };
  }
  const first = ctx.db.select({ one: sql`1`.as('one') }).from(orders).where(where).limit(upTo + 1).as('capped');
  const [{ total }] = await ctx.db.select({ total: count() }).from(first);
  return capped(total, upTo);
}

/**
 * One page next to an order in createdAt order (ties by id). The cursor order's own timestamp is
 * read in SQL (microseconds; a JavaScript Date would round them), and only within the organization.
 */
async function ordersBeside(
  ctx: Pick<ServiceContext, 'db'>,
  organizationId: string,
  where: SQL | undefined,
  sortOrder: 'asc' | 'desc',
  cursor: { after: string } | { before: string },
  limit: number,
): Promise<OrderRow[]> {
  const forward = 'after' in cursor;
  const id = 'after' in cursor ? cursor.after : cursor.before;
  // Walking forward in a descending list means older rows; walking back means newer ones.
  const older = (sortOrder === 'desc') === forward;
  const position = sql`(select ${orders.createdAt}, ${orders.id} from ${orders} where ${orders.id} = ${id} and ${orders.organizationId} = ${organizationId})`;
  const beside = older ? sql`(${orders.createdAt}, ${orders.id}) < ${position}` : sql`(${orders.createdAt}, ${orders.id}) > ${position}`;
  const direction = older ? desc : asc;
  const rows = await ctx.db
    .select()
    .from(orders)
    .where(and(where, beside))
    .orderBy(direction(orders.createdAt), direction(orders.id))
    .limit(limit);
  return forward ? rows : rows.reverse();
}
