import { Type, type Static } from '@sinclair/typebox';
import { formatAmount } from '../platform/amounts';
import { DateTime, iso, metadataOut, Nullable, NullableDateTime, StringEnum } from '../platform/wire-schema';
import type { ServiceContext } from '../service/context';
import { currencySymbolSchema } from './chain';
import { LINK_PRICE_CURRENCIES, LINK_STATUSES, linkStatus, type Collected, type PaymentLinkRow } from '../payment-links/links';

/** The public checkout URL of a link: <PUBLIC_BASE_URL>/l/<slug>. */
export function checkoutUrlOf(config: Pick<ServiceContext['config'], 'publicBaseUrl'>, link: Pick<PaymentLinkRow, 'slug'>): string {
  return `${config.publicBaseUrl}/l/${encodeURIComponent(link.slug)}`;
}

const currencyChoice = Type.Object({ currency: currencySymbolSchema(), chainId: Type.String({ example: 'ethereum-sepolia' }) });

export const paymentLinkSchema = Type.Object({
  id: Type.String({ example: 'pl_01jd3k…' }),
  slug: Type.String({ description: 'The checkout URL\'s last segment: yours, or 128 random bits when generated' }),
  title: Type.String(),
  description: Nullable(Type.String()),
  amount: Type.String({ description: 'Decimal string in token units (in dollars when priceCurrency is USD); "0": the payer chooses (within minAmount/maxAmount)' }),
  minAmount: Nullable(Type.String()),
  maxAmount: Nullable(Type.String()),
  currencies: Type.Array(currencyChoice, { description: 'The currency/chain pairs the payer picks from (priceCurrency USD: the routes each checkout\'s USD order offers)' }),
  priceCurrency: Nullable(StringEnum(LINK_PRICE_CURRENCIES), {
    description:
      'USD: the amount (and minAmount/maxAmount) are in dollars, at most 2 decimals; each checkout makes a USD order whose payer picks one of currencies as its route on the payment page. null: token units',
  }),
  inventoryTotal: Nullable(Type.Integer()),
  maxOpenOrders: Nullable(Type.Integer({ description: 'At most this many unpaid orders of the link at once (null: bounded by the pool reserve and inventory)' })),
  expiresAt: NullableDateTime(),
  metadata: metadataOut({ description: 'Copied onto every order made from the link, with paymentLinkId' }),
  successUrl: Nullable(Type.String({ description: 'null: the organization\'s default_order_success_url applies' })),
  cancelUrl: Nullable(Type.String({ description: 'null: the organization\'s default_order_cancel_url applies' })),
  status: StringEnum(LINK_STATUSES, {
    description: 'draft, active, archived; active shows as expired past expiresAt and sold_out while every unit is reserved or sold',
  }),
  checkoutUrl: Type.String({ description: '<PUBLIC_BASE_URL>/l/<slug>: the public checkout page (404 until published)' }),
  createdAt: DateTime(),
  updatedAt: DateTime(),
  publishedAt: NullableDateTime(),
  archivedAt: NullableDateTime(),
  counters: Type.Object({
    ordersCreated: Type.Integer(),
    ordersCompleted: Type.Integer(),
    openOrders: Type.Integer({ description: 'Pending orders: each holds one unit (reserved) and one pool address' }),
    amountCollected: Type.Array(Type.Object({ currency: Type.String(), chainId: Nullable(Type.String({ description: 'null for USD' })), amount: Type.String() }), {
      description: 'Received by completed orders, per token',
    }),
    inventory: Type.Object({
      total: Nullable(Type.Integer()),
      reserved: Type.Integer({ description: 'Units held by pending orders; returned when an order expires' }),
      sold: Type.Integer({ description: 'Units of completed orders' }),
      left: Nullable(Type.Integer({ description: 'total − reserved − sold (null without inventory)' })),
    }),
  }),
});

export type PaymentLinkView = Static<typeof paymentLinkSchema>;

/** The one presenter of a link; `collected` holds its completed orders' amounts (amountsCollected). */
export function presentPaymentLink(ctx: Pick<ServiceContext, 'registry' | 'config' | 'clock'>, link: PaymentLinkRow, collected: Collected[]): PaymentLinkView {
  const total = link.inventoryTotal;
  return {
    id: link.id,
    slug: link.slug,
    title: link.title,
    description: link.description,
    amount: link.amount,
    minAmount: link.minAmount,
    maxAmount: link.maxAmount,
    currencies: link.currencies,
    priceCurrency: link.priceCurrency ?? null,
    inventoryTotal: total,
    maxOpenOrders: link.maxOpenOrders,
    expiresAt: iso(link.expiresAt),
    metadata: (link.metadata ?? {}) as Record<string, unknown>,
    successUrl: link.successUrl,
    cancelUrl: link.cancelUrl,
    status: linkStatus(link, ctx.clock.now()),
    checkoutUrl: checkoutUrlOf(ctx.config, link),
    createdAt: link.createdAt.toISOString(),
    updatedAt: link.updatedAt.toISOString(),
    publishedAt: iso(link.publishedAt),
    archivedAt: iso(link.archivedAt),
    counters: {
      ordersCreated: link.ordersCreated,
      ordersCompleted: link.inventorySold,
      openOrders: link.inventoryReserved,
      amountCollected: collected
        .filter((c) => c.linkId === link.id)
        .map((c) => ({ currency: c.currency, chainId: c.chainId, amount: formatAmount(c.units, ctx.registry.tokenDecimals(c.chainId, c.currency)) })),
      inventory: {
        total,
        reserved: link.inventoryReserved,
        sold: link.inventorySold,
        left: total === null ? null : Math.max(0, total - link.inventoryReserved - link.inventorySold),
      },
    },
  };
}
