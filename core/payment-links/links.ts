import { randomBytes } from 'node:crypto';
import { and, asc, count, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { orders, paymentLinks } from '../../db/schema';
import { parseAmount } from '../platform/amounts';
import { AppError, isUniqueViolation, notFound, validationError } from '../platform/errors';
import { newId } from '../platform/ids';
import { isHttpUrl } from '../organizations/org-config';
import { assertNoSeedPhrase } from '../pool/secret-scan';
import type { ServiceContext } from '../service/context';
import { escapeLike, paginate } from '../platform/sql-fragments';
import { PAYMENT_LINK_ID_KEY } from '../orders/link-units';
import { deploymentUsdRoutes } from '../orders/routes';
import { USD } from '../chains/chain';

/** A payment link as stored. */
export type PaymentLinkRow = typeof paymentLinks.$inferSelect;
export type StoredLinkStatus = PaymentLinkRow['status'];
/** Stored statuses plus the derived ones: expired (past expiresAt) and sold_out (no unit left). */
export type LinkStatus = StoredLinkStatus | 'expired' | 'sold_out';
export const LINK_STATUSES: readonly LinkStatus[] = ['draft', 'active', 'archived', 'expired', 'sold_out'];

export interface CurrencyChoice {
  currency: string;
  chainId: string;
}

/** Bounds of a link's fields (the request schemas document them too). */
export const LINK_LIMITS = {
  titleMax: 200,
  descriptionMax: 2000,
  currenciesMax: 20,
  inventoryMax: 1_000_000,
  /** One of an order's 10 metadata pairs is paymentLinkId. */
  metadataPairsMax: 9,
  slugPattern: '^[A-Za-z0-9_-]{3,64}$',
} as const;

/** The payer chooses the amount. */
export const PAYER_CHOOSES = '0';

/** What a link may be priced in besides its tokens: USD (each checkout makes a USD order whose payer picks the route). */
export const LINK_PRICE_CURRENCIES = [USD] as const;
export type LinkPriceCurrency = (typeof LINK_PRICE_CURRENCIES)[number];

/** A USD price has cents: at most 2 decimals (as a USD order's amount). */
export const USD_PRICE_DECIMALS = 2;

export interface LinkInput {
  title?: string;
  description?: string | null;
  amount?: string;
  minAmount?: string | null;
  maxAmount?: string | null;
  currencies?: CurrencyChoice[];
  /**
   * USD: amount, minAmount and maxAmount are dollars (at most 2 decimals) and each checkout makes a
   * USD order whose payer picks one of `currencies` (each a USD stablecoin route of the deployment)
   * on its payment page; null or absent: token units.
   */
  priceCurrency?: LinkPriceCurrency | null;
  inventoryTotal?: number | null;
  maxOpenOrders?: number | null;
  expiresAt?: string | null;
  metadata?: Record<string, unknown>;
  successUrl?: string | null;
  cancelUrl?: string | null;
  slug?: string;
}

/** Unguessable: 128 random bits, base64url (22 characters), like the payment page's token. */
export function newSlug(): string {
  return randomBytes(16).toString('base64url');
}

/** The derived status a payer and a list see. */
export function linkStatus(link: Pick<PaymentLinkRow, 'status' | 'expiresAt' | 'inventoryTotal' | 'inventoryReserved' | 'inventorySold'>, now: Date): LinkStatus {
  if (link.status !== 'active') return link.status;
  if (link.expiresAt && link.expiresAt.getTime() <= now.getTime()) return 'expired';
  if (link.inventoryTotal !== null && link.inventoryReserved + link.inventorySold >= link.inventoryTotal) return 'sold_out';
  return 'active';
}

function field(name: string, message: string): AppError {
  return validationError(`${name} ${message}`, [{ field: name, message }]);
}

/**
 * The pairs offered by the registry and enabled (INVALID_CHAIN / INVALID_CURRENCY otherwise), without
 * repeats. A link priced in USD offers routes of a USD order: each must be a USD stablecoin route of
 * this deployment (INVALID_CURRENCY naming the entry otherwise), and its amounts have cents (2 decimals).
 */
function checkCurrencies(
  ctx: Pick<ServiceContext, 'registry'>,
  currencies: CurrencyChoice[],
  priceCurrency: LinkPriceCurrency | null,
): { currency: string; chainId: string; decimals: number }[] {
  if (currencies.length === 0) throw field('currencies', 'must offer at least one {currency, chainId}');
  const seen = new Set<string>();
  const usdRoutes = priceCurrency === USD ? deploymentUsdRoutes(ctx.registry) : null;
  return currencies.map(({ currency, chainId }, i) => {
    const chain = ctx.registry.requireOfferedChain(chainId);
    const token = ctx.registry.requireToken(chain, currency);
    const key = `${token.currency}@${chain.chainId}`;
    if (seen.has(key)) throw field('currencies', `offers ${token.currency} on ${chain.chainId} twice`);
    seen.add(key);
    if (usdRoutes && !usdRoutes.some((r) => r.currency === token.currency && r.chainId === chain.chainId)) {
      const message = 'not a USD stablecoin route of this deployment';
      throw new AppError(
        'INVALID_CURRENCY',
        `currencies[${i}]: ${token.currency} on ${chain.chainId} is not a USD stablecoin a link priced in USD can offer (its payers pick one of currencies as a USD order's route). Routes of this deployment: ${usdRoutes.map((r) => `${r.currency} on ${r.chainId}`).join(', ') || 'none'}`,
        [{ field: `currencies[${i}]`, message }],
      );
    }
    return { currency: token.currency, chainId: chain.chainId, decimals: usdRoutes ? USD_PRICE_DECIMALS : token.decimals };
  });
}

/** An amount valid in every offered token (decimals), compared in a common scale; a USD price in dollars and cents. */
function checkAmountForAll(name: string, text: string, tokens: { decimals: number }[], priceCurrency: LinkPriceCurrency | null): bigint {
  if (priceCurrency === USD && typeof text === 'string' && /\.\d{3,}$/.test(text)) {
    const message = `has more than ${USD_PRICE_DECIMALS} decimal places (a link priced in USD is in dollars and cents)`;
    throw new AppError('INVALID_AMOUNT', `${name} ${message}`, [{ field: name, message }]);
  }
  for (const t of tokens) parseAmount(text, t.decimals, name);
  return parseAmount(text, 18 + Math.max(...tokens.map((t) => t.decimals)), name);
}

/** Checks a link's whole state (after a change is applied); throws the first problem. */
function checkLink(ctx: Pick<ServiceContext, 'registry' | 'clock'>, link: Required<Omit<LinkInput, 'slug'>> & { slug?: string }, expiresAtChanged: boolean): void {
  if (!link.title || link.title.length > LINK_LIMITS.titleMax) throw field('title', `is required, at most ${LINK_LIMITS.titleMax} characters`);
  if (link.description !== null && link.description.length > LINK_LIMITS.descriptionMax) throw field('description', `must be at most ${LINK_LIMITS.descriptionMax} characters`);
  if (link.priceCurrency !== null && !(LINK_PRICE_CURRENCIES as readonly string[]).includes(link.priceCurrency)) {
    throw field('priceCurrency', `must be ${LINK_PRICE_CURRENCIES.join(' or ')}, or null for token units`);
  }
  const tokens = checkCurrencies(ctx, link.currencies, link.priceCurrency);
  if (link.amount === PAYER_CHOOSES) {
    const min = link.minAmount !== null ? checkAmountForAll('minAmount', link.minAmount, tokens, link.priceCurrency) : null;
    const max = link.maxAmount !== null ? checkAmountForAll('maxAmount', link.maxAmount, tokens, link.priceCurrency) : null;
    if (min !== null && max !== null && min > max) throw new AppError('INVALID_AMOUNT', 'minAmount must not be above maxAmount');
  } else {
    checkAmountForAll('amount', link.amount, tokens, link.priceCurrency);
    if (link.minAmount !== null || link.maxAmount !== null) throw new AppError('INVALID_AMOUNT', 'minAmount and maxAmount apply only when amount is "0" (the payer chooses)');
  }
  if (link.inventoryTotal !== null && (!Number.isInteger(link.inventoryTotal) || link.inventoryTotal < 1 || link.inventoryTotal > LINK_LIMITS.inventoryMax)) {
    throw field('inventoryTotal', `must be an integer from 1 to ${LINK_LIMITS.inventoryMax}`);
  }
  if (link.maxOpenOrders !== null && (!Number.isInteger(link.maxOpenOrders) || link.maxOpenOrders < 1)) throw field('maxOpenOrders', 'must be a positive integer');
  if (link.expiresAt !== null) {
    const at = Date.parse(link.expiresAt);
    if (!/[zZ]|[+-]\d\d:\d\d$/.test(link.expiresAt) || Number.isNaN(at)) throw field('expiresAt', 'must be an RFC 3339 date-time with an offset');
    if (expiresAtChanged && at <= ctx.clock.now().getTime()) throw field('expiresAt', 'must be in the future');
  }
  if (Object.keys(link.metadata).length > LINK_LIMITS.metadataPairsMax) throw field('metadata', `may hold at most ${LINK_LIMITS.metadataPairsMax} pairs (orders add ${PAYMENT_LINK_ID_KEY})`);
  if (PAYMENT_LINK_ID_KEY in link.metadata) throw field(`metadata.${PAYMENT_LINK_ID_KEY}`, 'is set by the service on every order made from the link');
  for (const name of ['successUrl', 'cancelUrl'] as const) {
    const url = link[name];
    if (url !== null && !isHttpUrl(url)) throw field(name, 'must be an absolute http(s) URL');
  }
  if (link.slug !== undefined && !new RegExp(LINK_LIMITS.slugPattern).test(link.slug)) throw field('slug', 'must be 3 to 64 letters, digits, - or _');
  assertNoSeedPhrase({ title: link.title, description: link.description, metadata: link.metadata });
}

function normalisedCurrencies(ctx: Pick<ServiceContext, 'registry'>, currencies: CurrencyChoice[], priceCurrency: LinkPriceCurrency | null): CurrencyChoice[] {
  return checkCurrencies(ctx, currencies, priceCurrency).map(({ currency, chainId }) => ({ currency, chainId }));
}

const duplicateSlug = (slug: string) => new AppError('DUPLICATE_SLUG', `The slug "${slug}" is taken; choose another or leave it out to get a generated one`);

/** Creates a draft link. A taken slug is 409 DUPLICATE_SLUG; a generated one is 128 random bits. */
export async function createPaymentLink(ctx: Pick<ServiceContext, 'db' | 'registry' | 'clock'>, organizationId: string, input: LinkInput): Promise<PaymentLinkRow> {
  const full = {
    title: input.title ?? '',
    description: input.description ?? null,
    amount: input.amount ?? '',
    minAmount: input.minAmount ?? null,
    maxAmount: input.maxAmount ?? null,
    currencies: input.currencies ?? [],
    priceCurrency: input.priceCurrency ?? null,
    inventoryTotal: input.inventoryTotal ?? null,
    maxOpenOrders: input.maxOpenOrders ?? null,
    expiresAt: input.expiresAt ?? null,
    metadata: input.metadata ?? {},
    successUrl: input.successUrl ?? null,
    cancelUrl: input.cancelUrl ?? null,
    slug: input.slug,
  };
  checkLink(ctx, full, true);
  const now = ctx.clock.now();
  try {
    const [row] = await ctx.db
      .insert(paymentLinks)
      .values({
        ...full,
        id: newId('pl'),
        organizationId,
        slug: full.slug ?? newSlug(),
        currencies: normalisedCurrencies(ctx, full.currencies, full.priceCurrency),
        expiresAt: full.expiresAt ? new Date(full.expiresAt) : null,
        status: 'draft',
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return row;
  } catch (err) {
    if (isUniqueViolation(err, 'payment_links_slug_uq')) throw duplicateSlug(full.slug ?? '');
    throw err;
  }
}

/** One of the organization's links; another organization's id is 404. */
export async function getPaymentLink(db: DbOrTx, organizationId: string, id: string): Promise<PaymentLinkRow> {
  const [row] = await db.select().from(paymentLinks).where(and(eq(paymentLinks.organizationId, organizationId), eq(paymentLinks.id, id)));
  if (!row) throw notFound('Payment link');
  return row;
}

/** The link a checkout URL names, whatever its organization (the slug is the public key). */
export async function findPaymentLinkBySlug(db: DbOrTx, slug: string): Promise<PaymentLinkRow | null> {
  if (!new RegExp(LINK_LIMITS.slugPattern).test(slug)) return null;
  const [row] = await db.select().from(paymentLinks).where(eq(paymentLinks.slug, slug));
  return row ?? null;
}

const FROZEN_WHEN_PUBLISHED = ['amount', 'minAmount', 'maxAmount', 'currencies', 'priceCurrency', 'slug'] as const;

/**
 * Changes a link. A draft changes freely; a published (active) link keeps its amount, bounds,
 * currencies, price currency and slug (a payer must never pay a price they did not see; its URL is out there):
 * changing them is 409 PAYMENT_LINK_FROZEN (sending the same values is fine); an archived link is
 * 409 INVALID_STATUS_TRANSITION.
 */
export async function updatePaymentLink(ctx: Pick<ServiceContext, 'db' | 'registry' | 'clock'>, organizationId: string, id: string, input: LinkInput): Promise<PaymentLinkRow> {
  const link = await getPaymentLink(ctx.db, organizationId, id);
  if (link.status === 'archived') throw new AppError('INVALID_STATUS_TRANSITION', 'An archived payment link cannot be changed');
  if (link.status === 'active') {
    for (const name of FROZEN_WHEN_PUBLISHED) {
      if (input[name] === undefined) continue;
      const same =
        name === 'currencies'
          ? JSON.stringify(normalisedCurrencies(ctx, input.currencies!, null)) === JSON.stringify(link.currencies)
          : name === 'priceCurrency'
            ? (input.priceCurrency ?? null) === link.priceCurrency
            : input[name] === link[name];
      if (!same) throw new AppError('PAYMENT_LINK_FROZEN', `${name} of a published payment link cannot change (payers may have seen it); create a new link instead`);
    }
  }
  const pick = <K extends keyof LinkInput>(name: K, current: NonNullable<LinkInput[K]> | null) => (input[name] === undefined ? current : input[name]);
  const next = {
    title: pick('title', link.title) as string,
    description: pick('description', link.description) ?? null,
    amount: pick('amount', link.amount) as string,
    minAmount: pick('minAmount', link.minAmount) ?? null,
    maxAmount: pick('maxAmount', link.maxAmount) ?? null,
    currencies: pick('currencies', link.currencies) as CurrencyChoice[],
    priceCurrency: (input.priceCurrency === undefined ? link.priceCurrency : input.priceCurrency) ?? null,
    inventoryTotal: pick('inventoryTotal', link.inventoryTotal) ?? null,
    maxOpenOrders: pick('maxOpenOrders', link.maxOpenOrders) ?? null,
    expiresAt: input.expiresAt === undefined ? (link.expiresAt?.toISOString() ?? null) : input.expiresAt,
    metadata: (pick('metadata', link.metadata as Record<string, unknown>) ?? {}) as Record<string, unknown>,
    successUrl: pick('successUrl', link.successUrl) ?? null,
    cancelUrl: pick('cancelUrl', link.cancelUrl) ?? null,
    slug: pick('slug', link.slug) as string,
  };
  checkLink(ctx, next, input.expiresAt !== undefined);
  try {
    const [row] = await ctx.db
      .update(paymentLinks)
      .set({
        ...next,
        currencies: normalisedCurrencies(ctx, next.currencies, next.priceCurrency),
        expiresAt: next.expiresAt ? new Date(next.expiresAt) : null,
        updatedAt: ctx.clock.now(),
      })
      // Not archived meanwhile (an archive between the read and this write wins).
      .where(and(eq(paymentLinks.id, id), eq(paymentLinks.organizationId, organizationId), eq(paymentLinks.status, link.status)))
      .returning();
    if (!row) throw new AppError('CONFLICT', 'The payment link changed meanwhile; read it again');
    return row;
  } catch (err) {
    if (isUniqueViolation(err, 'payment_links_slug_uq')) throw duplicateSlug(next.slug);
    throw err;
  }
}

/** draft → active. Anything else is 409 INVALID_STATUS_TRANSITION. */
export async function publishPaymentLink(ctx: Pick<ServiceContext, 'db' | 'clock'>, organizationId: string, id: string): Promise<PaymentLinkRow> {
  return transition(ctx, organizationId, id, ['draft'], 'active', 'Only a draft can be published');
}

/** draft or active → archived (no new orders; open ones stay payable). Archived again is 409. */
export async function archivePaymentLink(ctx: Pick<ServiceContext, 'db' | 'clock'>, organizationId: string, id: string): Promise<PaymentLinkRow> {
  return transition(ctx, organizationId, id, ['draft', 'active'], 'archived', 'The payment link is already archived');
}

async function transition(
  ctx: Pick<ServiceContext, 'db' | 'clock'>,
  organizationId: string,
  id: string,
  from: StoredLinkStatus[],
  to: StoredLinkStatus,
  refusal: string,
): Promise<PaymentLinkRow> {
  const now = ctx.clock.now();
  const [row] = await ctx.db
    .update(paymentLinks)
    .set({ status: to, updatedAt: now, ...(to === 'active' ? { publishedAt: now } : { archivedAt: now }) })
    .where(and(eq(paymentLinks.id, id), eq(paymentLinks.organizationId, organizationId), inArray(paymentLinks.status, from)))
    .returning();
  if (row) return row;
  const link = await getPaymentLink(ctx.db, organizationId, id);
  throw new AppError('INVALID_STATUS_TRANSITION', `${refusal} (status: ${link.status})`, undefined, { status: link.status });
}

/**
 * DELETE: a link no order was made from is deleted; one with orders is archived instead (its
 * orders keep pointing at it), and the answer says which.
 */
export async function deletePaymentLink(ctx: Pick<ServiceContext, 'db' | 'clock'>, organizationId: string, id: string): Promise<{ deleted: true } | { deleted: false; link: PaymentLinkRow }> {
  const [gone] = await ctx.db
    .delete(paymentLinks)
    .where(and(eq(paymentLinks.id, id), eq(paymentLinks.organizationId, organizationId), eq(paymentLinks.ordersCreated, 0)))
    .returning({ id: paymentLinks.id });
  if (gone) return { deleted: true };
  const link = await getPaymentLink(ctx.db, organizationId, id);
  if (link.status === 'archived') return { deleted: false, link };
  return { deleted: false, link: await archivePaymentLink(ctx, organizationId, id) };
}

export const LINK_SORT_FIELDS = ['createdAt', 'updatedAt', 'title'] as const;

export interface ListLinksQuery {
  page: number;
  limit: number;
  sortBy: (typeof LINK_SORT_FIELDS)[number];
  sortOrder: 'asc' | 'desc';
  status?: LinkStatus;
  /** Case-insensitive substring of the title or the slug. */
  search?: string;
}

function statusCondition(status: LinkStatus, now: Date): SQL {
  const t = paymentLinks;
  const notExpired = sql`(${t.expiresAt} is null or ${t.expiresAt} > ${now.toISOString()}::timestamptz)`;
  const soldOut = sql`(${t.inventoryTotal} is not null and ${t.inventoryReserved} + ${t.inventorySold} >= ${t.inventoryTotal})`;
  if (status === 'draft' || status === 'archived') return eq(t.status, status);
  if (status === 'expired') return sql`${t.status} = 'active' and not ${notExpired}`;
  if (status === 'sold_out') return sql`${t.status} = 'active' and ${notExpired} and ${soldOut}`;
  return sql`${t.status} = 'active' and ${notExpired} and not ${soldOut}`;
}

export async function listPaymentLinks(ctx: Pick<ServiceContext, 'db' | 'clock'>, organizationId: string, query: ListLinksQuery): Promise<{ items: PaymentLinkRow[]; total: number }> {
  const conditions: SQL[] = [eq(paymentLinks.organizationId, organizationId)];
  if (query.status) conditions.push(statusCondition(query.status, ctx.clock.now()));
  if (query.search) {
    const pattern = `%${escapeLike(query.search)}%`;
    conditions.push(sql`(${paymentLinks.title} ilike ${pattern} escape '\\' or ${paymentLinks.slug} ilike ${pattern} escape '\\')`);
  }
  const where = and(...conditions);
  const column = query.sortBy === 'title' ? paymentLinks.title : query.sortBy === 'updatedAt' ? paymentLinks.updatedAt : paymentLinks.createdAt;
  const direction = query.sortOrder === 'asc' ? asc : desc;
  const [items, [{ total }]] = await Promise.all([
    paginate(ctx.db.select().from(paymentLinks).where(where).orderBy(direction(column), direction(paymentLinks.id)).$dynamic(), query),
    ctx.db.select({ total: count() }).from(paymentLinks).where(where),
  ]);
  return { items, total };
}

/** Amount received by the completed orders of each link, per token (base units). */
export interface Collected {
  linkId: string;
  currency: string;
  /** Null for USD (orders priced in dollars, whatever their routes' chains). */
  chainId: string | null;
  units: bigint;
}

export async function amountsCollected(db: DbOrTx, organizationId: string, linkIds: string[]): Promise<Collected[]> {
  if (linkIds.length === 0) return [];
  const linkId = sql<string>`${orders.paymentLinkId}`;
  // USD orders add up in dollars, whatever route each was paid by.
  // A literal, not a parameter: the select list and the group by must be the same expression.
  const chainId = sql<string | null>`(case when ${orders.currency} = ${sql.raw(`'${USD}'`)} then null else ${orders.chainId} end)`;
  const rows = await db
    .select({ linkId, currency: orders.currency, chainId, units: sql<string>`sum(${orders.amountReceived})::text` })
    .from(orders)
    .where(and(inArray(orders.paymentLinkId, linkIds), eq(orders.organizationId, organizationId), eq(orders.status, 'completed')))
    .groupBy(linkId, orders.currency, chainId)
    .orderBy(linkId, orders.currency, chainId);
  return rows.map((r) => ({ ...r, units: BigInt(r.units) }));
}
