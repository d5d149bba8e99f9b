import { and, eq } from 'drizzle-orm';
import { orders, organizations } from '../../db/schema';
import { parseAmount } from '../platform/amounts';
import { AppError } from '../platform/errors';
import { newId } from '../platform/ids';
import type { ServiceContext } from '../service/context';
import { createOrder } from '../orders/orders';
import { PAY_TOKEN_PATTERN } from '../orders/pay-token';
import { findPaymentLinkBySlug, linkStatus, PAYER_CHOOSES, type PaymentLinkRow } from './links';

/** An order as stored: the table's row, named here rather than imported from core/views/ (which imports this room). */
type OrderRow = typeof orders.$inferSelect;

export interface CheckoutChoice {
  currency: string;
  chainId: string;
  /** Only for a link whose amount is "0" (the payer chooses). */
  amount?: unknown;
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
 * otherwise) and the amount, the link's or, when the payer chooses, a valid one within minAmount
 * and maxAmount (INVALID_AMOUNT with the bound in extra otherwise). Stores nothing.
 */
export function resolveCheckoutChoice(ctx: Pick<ServiceContext, 'registry'>, link: PaymentLinkRow, choice: CheckoutChoice): { currency: string; chainId: string; amount: string } {
  const offered = link.currencies.find((c) => c.currency === choice.currency && c.chainId === choice.chainId);
  if (!offered) throw new AppError('INVALID_CURRENCY', `${String(choice.currency)} on ${String(choice.chainId)} is not offered by this link`);
  if (link.amount !== PAYER_CHOOSES) return { ...offered, amount: link.amount };
  const decimals = ctx.registry.tokenDecimals(offered.chainId, offered.currency);
  const units = parseAmount(choice.amount, decimals);
  if (link.minAmount !== null && units < parseAmount(link.minAmount, decimals, 'minAmount')) {
    throw new AppError('INVALID_AMOUNT', `The amount must be at least ${link.minAmount} ${offered.currency}`, undefined, { minAmount: link.minAmount });
  }
  if (link.maxAmount !== null && units > parseAmount(link.maxAmount, decimals, 'maxAmount')) {
    throw new AppError('INVALID_AMOUNT', `The amount must be at most ${link.maxAmount} ${offered.currency}`, undefined, { maxAmount: link.maxAmount });
  }
  return { ...offered, amount: choice.amount as string };
}

/**
 * A checkout that proceeds: a fresh order for the payer's choice, made by the same operation as
 * POST /orders (createOrder) from the link (its payment_link_id; paymentLinkId added to the
 * link's metadata), with an orderReference from the link and the link's redirects (the
 * organization's defaults when it has none). The order's insert takes one of the link's units or
 * fails whole (core/orders/link-units.ts): sold out, too many open orders, or the link archived
 * meanwhile.
 */
export async function createCheckoutOrder(ctx: ServiceContext, link: PaymentLinkRow, choice: CheckoutChoice): Promise<OrderRow> {
  assertCheckoutOpen(ctx, link);
  const { currency, chainId, amount } = resolveCheckoutChoice(ctx, link, choice);
  try {
    return await createOrder(
      ctx,
      link.organizationId,
      {
        orderReference: `${link.id}/${newId('ord').slice(4)}`,
        amount,
        currency,
        chainId,
        successUrl: link.successUrl ?? undefined,
        cancelUrl: link.cancelUrl ?? undefined,
        metadata: link.metadata as Record<string, unknown>,
      },
      { paymentLinkId: link.id },
    );
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
