import { and, eq } from 'drizzle-orm';
import { orders, organizations } from '../../db/schema';
import { parseAmount } from '../platform/amounts';
import { AppError } from '../platform/errors';
import { newId } from '../platform/ids';
import type { ServiceContext } from '../service/context';
import { createOrder } from '../orders/orders';
import { PAY_TOKEN_PATTERN } from '../orders/pay-token';
import { deploymentUsdRoutes, placeOrder } from '../orders/routes';
import { USD } from '../chains/chain';
import type { ChainRegistry } from '../chains/registry';
import { findPaymentLinkBySlug, linkStatus, PAYER_CHOOSES, USD_PRICE_DECIMALS, type CurrencyChoice, type PaymentLinkRow } from './links';

/** An order as stored: the table's row, named here rather than imported from core/views/ (which imports this room). */
type OrderRow = typeof orders.$inferSelect;

export interface CheckoutChoice {
  /** A token link's: the pair the payer chose (a link priced in USD ignores them: its payer picks the route on the payment page). */
  currency: string;
  chainId: string;
  /** Only for a link whose amount is "0" (the payer chooses). */
  amount?: unknown;
}

/** Whether a link is priced in USD: its checkouts make USD orders whose payer picks the route. */
export const isUsdLink = (link: Pick<PaymentLinkRow, 'priceCurrency'>): boolean => link.priceCurrency === USD;

/**
 * The routes a USD link's checkout offers now: its currencies that are still USD stablecoin routes
 * of the deployment (a chain disabled since publishing drops out rather than failing every checkout),
 * in the link's order. None left: the link's own, so the order's creation names what is missing.
 */
export function linkUsdRoutes(registry: ChainRegistry, link: Pick<PaymentLinkRow, 'currencies'>): CurrencyChoice[] {
  const available = deploymentUsdRoutes(registry);
  const offered = link.currencies.filter((c) => available.some((r) => r.currency === c.currency && r.chainId === c.chainId));
  return offered.length > 0 ? offered : link.currencies;
}

/** Postgres errors raised by the link's unit trigger (0018_order_payment_link.sql) → our codes. */
const UNIT_REFUSALS: Record<string, () => AppError> = {
  SGL01: () => new AppError('PAYMENT_LINK_SOLD_OUT', 'Sold out: every unit of this link is sold or reserved by an open order'),
  SGL02: () => new AppError('PAYMENT_LINK_BUSY', 'This link has as many open orders as it allows; retry in a few minutes', undefined, { retryAfter: 60 }),
  SGL03: () => new AppError('PAYMENT_LINK_UNAVAILABLE', 'This payment link is no longer available'),
};

function unitRefusal(err: unknown): AppError | null {
  for (let e = err as { code?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code && UNIT_REFUSALS[e.code]) return UNIT_REFUSALS[e.code]();
  }
  return null;
}

/** Whether the link takes checkouts now; throws the payer's reason otherwise. */
export function assertCheckoutOpen(ctx: Pick<ServiceContext, 'clock'>, link: PaymentLinkRow): void {
  const status = linkStatus(link, ctx.clock.now());
  if (status === 'draft') throw new AppError('RESOURCE_NOT_FOUND', 'Payment link not found');
  if (status === 'archived' || status === 'expired') throw new AppError('PAYMENT_LINK_UNAVAILABLE', 'This payment link is no longer available');
  if (status === 'sold_out') throw UNIT_REFUSALS.SGL01();
}

/**
 * The payer's choice checked against the link: an offered currency/chain pair (INVALID_CURRENCY
 * otherwise; a link priced in USD has none to choose here: its payer picks the route on the payment
 * page) and the amount, the link's or, when the payer chooses, a valid one within minAmount and
 * maxAmount (INVALID_AMOUNT with the bound in extra otherwise; a USD link's in dollars and cents).
 * Stores nothing.
 */
export function resolveCheckoutChoice(ctx: Pick<ServiceContext, 'registry'>, link: PaymentLinkRow, choice: CheckoutChoice): { currency: string; chainId: string | null; amount: string } {
  if (isUsdLink(link)) return { currency: USD, chainId: null, amount: checkedAmount(link, choice.amount, USD_PRICE_DECIMALS, USD) };
  const offered = link.currencies.find((c) => c.currency === choice.currency && c.chainId === choice.chainId);
  if (!offered) throw new AppError('INVALID_CURRENCY', `${String(choice.currency)} on ${String(choice.chainId)} is not offered by this link`);
  return { ...offered, amount: checkedAmount(link, choice.amount, ctx.registry.tokenDecimals(offered.chainId, offered.currency), offered.currency) };
}

/** The link's amount, or the payer's within the link's bounds (in `decimals`, named `unit` in a refusal). */
function checkedAmount(link: PaymentLinkRow, amount: unknown, decimals: number, unit: string): string {
  if (link.amount !== PAYER_CHOOSES) return link.amount;
  const units = parseAmount(amount, decimals);
  if (link.minAmount !== null && units < parseAmount(link.minAmount, decimals, 'minAmount')) {
    throw new AppError('INVALID_AMOUNT', `The amount must be at least ${link.minAmount} ${unit}`, undefined, { minAmount: link.minAmount });
  }
  if (link.maxAmount !== null && units > parseAmount(link.maxAmount, decimals, 'maxAmount')) {
    throw new AppError('INVALID_AMOUNT', `The amount must be at most ${link.maxAmount} ${unit}`, undefined, { maxAmount: link.maxAmount });
  }
  return amount as string;
}

/**
 * A checkout that proceeds: a fresh order for the payer's choice, made by the same operation as
 * POST /orders from the link (its payment_link_id; paymentLinkId added to the link's metadata), with
 * an orderReference from the link and the link's redirects (the organization's defaults when it has
 * none): a token order (createOrder) on the chosen pair, or, for a link priced in USD, a USD order
 * (placeOrder with currency USD) offering the link's currencies as routes, with no address until its
 * payer picks one on the payment page. The order's insert takes one of the link's units or fails
 * whole (core/orders/link-units.ts): sold out, too many open orders, or the link archived meanwhile.
 */
export async function createCheckoutOrder(ctx: ServiceContext, link: PaymentLinkRow, choice: CheckoutChoice): Promise<OrderRow> {
  assertCheckoutOpen(ctx, link);
  const { currency, chainId, amount } = resolveCheckoutChoice(ctx, link, choice);
  const terms = {
    orderReference: `${link.id}/${newId('ord').slice(4)}`,
    amount,
    successUrl: link.successUrl ?? undefined,
    cancelUrl: link.cancelUrl ?? undefined,
    metadata: link.metadata as Record<string, unknown>,
  };
  const fromLink = { paymentLinkId: link.id };
  try {
    if (chainId === null) return await placeOrder(ctx, link.organizationId, { ...terms, currency: USD, routes: linkUsdRoutes(ctx.registry, link) }, fromLink);
    return await createOrder(ctx, link.organizationId, { ...terms, currency, chainId }, fromLink);
  } catch (err) {
    throw unitRefusal(err) ?? err;
  }
}

/**
 * The visitor's open order of this link (the page token their cookie carries), if it is still
 * pending and inside its payment window: a returning visitor gets it back instead of a new one.
 */
export async function findOpenCheckoutOrder(ctx: Pick<ServiceContext, 'db' | 'clock'>, link: PaymentLinkRow, payToken: string): Promise<OrderRow | null> {
  if (!PAY_TOKEN_PATTERN.test(payToken)) return null;
  const [order] = await ctx.db
    .select()
    .from(orders)
    .where(and(eq(orders.payToken, payToken), eq(orders.organizationId, link.organizationId), eq(orders.status, 'pending')));
  if (!order || order.paymentLinkId !== link.id) return null;
  return order.expiresAt.getTime() > ctx.clock.now().getTime() ? order : null;
}

/** What the checkout page shows of a link: the link, its seller's name and support contact. Null: no such slug. */
export async function findCheckout(
  ctx: Pick<ServiceContext, 'db'>,
  slug: string,
): Promise<{ link: PaymentLinkRow; organizationName: string; supportContact: string | null } | null> {
  const link = await findPaymentLinkBySlug(ctx.db, slug);
  if (!link) return null;
  const [org] = await ctx.db
    .select({ name: organizations.name, supportContact: organizations.supportContact })
    .from(organizations)
    .where(eq(organizations.id, link.organizationId));
  return { link, organizationName: org?.name ?? '', supportContact: org?.supportContact ?? null };
}
