import type { ServiceContext } from '../service/context';
import { formatAmount } from '../platform/amounts';
import type { orders } from '../../db/schema';
import { Type, type Static } from '@sinclair/typebox';
import { DateTime, metadataOut, Nullable, NullableDateTime, StringEnum } from '../platform/wire-schema';
import { UNATTRIBUTED_REASONS } from '../transfers/transfers';
import { currencySymbolSchema } from './chain';
import { USD, USD_DECIMALS, type Protocol } from '../chains/registry';

/**
 * How much of an order has been paid, derived from amount and amountReceived (base units of the
 * same token, so compared exactly): merchants read it instead of comparing decimal strings. It
 * counts what amountReceived counts (pending and confirmed transfers), and says nothing of status:
 * a `partial` order may still complete if the rest arrives, an `overpaid` one completed.
 */
export const PAYMENT_STATES = ['unpaid', 'partial', 'paid', 'overpaid'] as const;
export type PaymentState = (typeof PAYMENT_STATES)[number];

export function paymentStateOf(amount: bigint, received: bigint): PaymentState {
  if (received <= 0n) return 'unpaid';
  if (received < amount) return 'partial';
  return received === amount ? 'paid' : 'overpaid';
}

/**
 * What happened to an order off the happy path (issue 40; BTCPay's invoice exceptions), derived
 * from its row, as the list filter ?exception= reads them (exceptionCondition, core/orders/exceptions.ts):
 * - underpaid: completed having received something, but less than its amount (within the
 *   organization's underpayment tolerance, or by hand);
 * - overpaid: received more than its amount;
 * - paidLate: a payment reached its address after its grace (recorded against it, never credited automatically);
 * - unattributedPayments: transfers into its address during or just after its life were left unattributed naming it;
 * - manual: completed by a merchant's decision (a payment attributed by hand, or settled by hand).
 */
export const ORDER_EXCEPTIONS = ['underpaid', 'overpaid', 'paidLate', 'unattributedPayments', 'manual'] as const;
export type OrderException = (typeof ORDER_EXCEPTIONS)[number];

export function orderExceptions(
  order: Pick<OrderRow, 'status' | 'amount' | 'amountReceived' | 'latePaidAt' | 'unattributedPayments' | 'resolution'>,
): OrderException[] {
  const out: OrderException[] = [];
  if (order.status === 'completed' && order.amountReceived > 0n && order.amountReceived < order.amount) out.push('underpaid');
  if (order.amountReceived > order.amount) out.push('overpaid');
  if (order.latePaidAt) out.push('paidLate');
  if (order.unattributedPayments > 0) out.push('unattributedPayments');
  if (order.resolution === 'manual') out.push('manual');
  return out;
}

/** An order as stored. */
export type OrderRow = typeof orders.$inferSelect;

/** An order priced in a token (today's form): its chain, address and pool address are never null. */
export type TokenOrderRow = OrderRow & { chainId: string; protocol: string; address: string; poolAddressId: number };

/** The pool addresses an order holds: its own (a token order) or those of its chosen routes (a USD order), each once. */
export function heldPoolAddresses(order: Pick<OrderRow, 'chosenRoutes' | 'poolAddressId' | 'protocol'>): { poolAddressId: number; protocol: Protocol }[] {
  if (order.chosenRoutes) {
    return [...new Map(order.chosenRoutes.map((r) => [r.poolAddressId, { poolAddressId: r.poolAddressId, protocol: r.protocol }])).values()];
  }
  return order.poolAddressId === null ? [] : [{ poolAddressId: order.poolAddressId, protocol: order.protocol as Protocol }];
}

/** Decimals of an order's token (the registry's one authority): USD base units for a USD order. */
export function orderDecimals(ctx: Pick<ServiceContext, 'registry'>, order: Pick<OrderRow, 'chainId' | 'currency'>): number {
  return order.currency === USD ? USD_DECIMALS : ctx.registry.tokenDecimals(order.chainId, order.currency);
}

/** A USD amount (base units) in a token's base units, rounded up: what a payer must send to cover it. */
export function usdInTokenUnits(usd: bigint, decimals: number): bigint {
  const scale = 10n ** BigInt(USD_DECIMALS - decimals);
  return (usd + scale - 1n) / scale;
}

/** A token amount (base units) in USD base units: exact (a route token has at most USD_DECIMALS). */
export function tokenUnitsInUsd(units: bigint, decimals: number): bigint {
  return units * 10n ** BigInt(USD_DECIMALS - decimals);
}

/** A USD order's routes on the wire (all null for a token order). */
function presentRoutes(ctx: Pick<ServiceContext, 'registry'>, order: OrderRow): Pick<OrderView, 'routes' | 'route' | 'chosenRoutes'> {
  if (!order.routes) return { routes: null, route: null, chosenRoutes: null };
  const inToken = (route: { chainId: string; currency: string }, usd: bigint) => {
    const decimals = ctx.registry.tokenDecimals(route.chainId, route.currency);
    return formatAmount(usdInTokenUnits(usd, decimals), decimals);
  };
  const chosen = order.chosenRoutes ?? [];
  const current = chosen.find((r) => r.chainId === order.chainId && r.currency === order.routeCurrency);
  const due = order.amount > order.amountReceived ? order.amount - order.amountReceived : 0n;
  return {
    routes: order.routes.map((r) => ({ currency: r.currency, chainId: r.chainId, amount: inToken(r, order.amount) })),
    route: current
      ? { currency: current.currency, chainId: current.chainId, protocol: current.protocol, address: current.address, amount: inToken(current, order.amount), amountDue: inToken(current, due), chosenAt: current.chosenAt }
      : null,
    chosenRoutes: chosen.map((r) => ({
      currency: r.currency,
      chainId: r.chainId,
      address: r.address,
      amountReceived: formatAmount(BigInt(r.received), ctx.registry.tokenDecimals(r.chainId, r.currency)),
      chosenAt: r.chosenAt,
    })),
  };
}

/** The hosted payment page of an order: its unguessable token, never its id. */
export function paymentUrlOf(config: Pick<ServiceContext['config'], 'publicBaseUrl'>, order: Pick<OrderRow, 'payToken'>): string {
  return `${config.publicBaseUrl}/pay/${order.payToken}`;
}

/**
 * The order's wire object (the union of descriptions A and B, design.md §2), declared once: the
 * OpenAPI document shows this schema and OrderView is derived from it.
 */
export const orderSchema = Type.Object({
  orderId: Type.String({ example: 'ord_01jd3k…' }),
  orderReference: Type.String({ maxLength: 255 }),
  amount: Type.String({ description: 'Decimal string in token units (a USD order: in dollars)', example: '10.5' }),
  amountReceived: Type.String({
    description:
      'Sum of the transfers counted toward this order that are not dropped (pending and confirmed): right chain, right token, block time between creation and graceEndsAt. Overpayment shows as the excess over amount.',
  }),
  amountDue: Type.String({
    description: 'Derived (not in the spec): amount − amountReceived when positive, else "0". What the payer still has to send, in token units.',
    example: '4.5',
  }),
  amountExcess: Type.String({
    description: 'Derived (not in the spec): amountReceived − amount when positive, else "0". An overpayment, in token units.',
    example: '0',
  }),
  amountRefunded: Type.String({
    description:
      'What refunds of this order add up to, in token units: every refund not cancelled or expired (requested, awaiting_claim, claimed, approved or completed). A new refund may not take it past amountReceived. The refunds themselves: GET /refunds?orderId=',
    example: '0',
  }),
  paymentState: StringEnum(PAYMENT_STATES, {
    description:
      'Derived (not in the spec) from amount and amountReceived: unpaid (nothing received), partial (less than amount), paid (exactly amount), overpaid (more). Counts what amountReceived counts (pending and confirmed transfers); status says whether the order completed.',
  }),
  currency: Type.String({
    description: 'The token symbol the order is priced and paid in (USDT, USDC, DAI, or one the chains file adds); USD for an order priced in dollars whose payer picks the route (see routes, route)',
    example: 'USDT',
  }),
  chainId: Nullable(Type.String({ example: 'ethereum-sepolia', description: 'A USD order: its current route\'s chain, null until a route is chosen' })),
  protocol: Nullable(Type.String({ enum: ['evm', 'tron', 'solana'], description: 'A USD order: its current route\'s, null until a route is chosen' })),
  address: Nullable(Type.String({ description: 'Payment address allocated from the pool (a USD order: its current route\'s, null until a route is chosen)' })),
  paymentAddress: Nullable(Type.String({ description: 'The same address under the name the spec also uses ("also seen under the name paymentAddress")' })),
  routes: Nullable(
    Type.Array(
      Type.Object({
        currency: Type.String({ example: 'USDT' }),
        chainId: Type.String({ example: 'tron-nile' }),
        amount: Type.String({ description: 'The order\'s amount in this token (1 token = 1 USD), decimal string in token units', example: '12.34' }),
      }),
      { description: 'A USD order: the routes its payer may pay by (a USD stablecoin on a chain each); null for a token order' },
    ),
  ),
  route: Nullable(
    Type.Object({
      currency: Type.String({ example: 'USDT' }),
      chainId: Type.String({ example: 'tron-nile' }),
      protocol: Type.String({ enum: ['evm', 'tron', 'solana'] }),
      address: Type.String(),
      amount: Type.String({ description: 'The order\'s amount in the route\'s token' }),
      amountDue: Type.String({ description: 'What is still to pay, in the route\'s token (rounded up to its decimals)' }),
      chosenAt: DateTime(),
    }),
    { description: 'A USD order: its current route (chosen on its payment page or with POST /orders/{id}/route; a completed order: the route of the payment that completed it); null until one is chosen, and for a token order' },
  ),
  chosenRoutes: Nullable(
    Type.Array(
      Type.Object({
        currency: Type.String(),
        chainId: Type.String(),
        address: Type.String(),
        amountReceived: Type.String({ description: 'Counted payments by this route, in its token' }),
        chosenAt: DateTime(),
      }),
    ),
    {
      description:
        'A USD order: every route it was given, in the order chosen. Payments to each of their addresses in that route\'s token count toward the order until it ends, so a payment still made by a route the payer switched away from is credited (amountReceived sums them in USD). null for a token order',
    },
  ),
  paymentUrl: Type.String({ description: 'Hosted payment page: <PUBLIC_BASE_URL>/pay/<token>, the token 128 random bits (not the order id)' }),
  status: StringEnum(['pending', 'completed', 'expired']),
  metadata: metadataOut(),
  successUrl: Nullable(Type.String()),
  cancelUrl: Nullable(Type.String()),
  requiredConfirmations: Type.Integer({ description: 'Confirmations a payment needs before it completes the order' }),
  expiresAt: DateTime({ description: 'End of the payment window' }),
  graceEndsAt: DateTime({
    description:
      'expiresAt + grace: payments mined up to this time still count. The order expires only after this time has passed, the chain has been scanned past it, and no counted payment awaits confirmations.',
  }),
  createdAt: DateTime(),
  txHash: Type.Optional(Type.String({ description: 'Completed orders: the transaction whose confirmation completed the order' })),
  blockNumber: Type.Optional(Type.Integer({ description: 'Completed orders: the block that transaction is in now (follows it when a reorg re-mines it)' })),
  confirmations: Type.Optional(Type.Integer({ description: 'Completed orders: confirmations of that transaction at completion' })),
  completedAt: Type.Optional(DateTime({ description: 'Completed orders' })),
  expiredAt: Type.Optional(DateTime({ description: 'Expired orders' })),
  exceptions: Type.Array(StringEnum(ORDER_EXCEPTIONS), {
    description:
      'What happened off the happy path (filter with ?exception=): underpaid (completed short of its amount, within the organization\'s underpayment tolerance), overpaid (received more than its amount), paidLate (a payment reached its address after its grace: recorded, never credited automatically), unattributedPayments (transfers into its address during or just after its life were left unattributed naming this order; see unattributedPayments), manual (completed by a merchant\'s decision)',
  }),
  resolution: Nullable(StringEnum(['automatic', 'manual'] as const), {
    description: 'Completed orders: automatic (by its payments as detected) or manual (a payment attributed by hand, or settled by hand: see resolvedBy, resolvedAt, resolutionReason). null otherwise',
  }),
  resolvedBy: Nullable(Type.String({ description: 'manual: who decided (a user\'s e-mail, or the API key)' })),
  resolvedAt: NullableDateTime({ description: 'manual: when' }),
  resolutionReason: Nullable(Type.String({ description: 'manual: why, as given' })),
  lateWindowEndsAt: NullableDateTime({
    description: 'Expired in an organization with a late-payment window: until then payments to its address are recorded against it (paidLate) and the address is not handed out again',
  }),
  unattributedPayments: Type.Array(
    Type.Object({
      transferId: Type.String(),
      reason: StringEnum(UNATTRIBUTED_REASONS),
      relation: StringEnum(['possible', 'previous', 'next'] as const),
      amount: Type.String({ description: 'Decimal string in token units of the transfer\'s token' }),
      currency: Type.String(),
      chainId: Type.String(),
      txHash: Type.String(),
      from: Type.String(),
      blockTimestamp: DateTime(),
    }),
    {
      description:
        'The transfers into its address still unattributed that name this order as a candidate (paid late, paid twice, undecidable), with their reason; attribute one with POST /transfers/{id}/attribute. Not in webhook event data',
    },
  ),
});

/** An order on the wire; amountReceived sums the counted, non-dropped transfers (pending or confirmed). */
export type OrderView = Static<typeof orderSchema>;
export type UnattributedPaymentView = OrderView['unattributedPayments'][number];

/**
 * The one presenter of an order: every route and every order event's data are built from it.
 * Completion fields appear only on completed orders, expiredAt only on expired ones.
 */
export function presentOrder(ctx: Pick<ServiceContext, 'registry' | 'config'>, order: OrderRow, unattributedPayments: UnattributedPaymentView[] = []): OrderView {
  const decimals = orderDecimals(ctx, order);
  const view: OrderView = {
    orderId: order.id,
    orderReference: order.orderReference,
    amount: formatAmount(order.amount, decimals),
    amountReceived: formatAmount(order.amountReceived, decimals),
    amountDue: formatAmount(order.amount > order.amountReceived ? order.amount - order.amountReceived : 0n, decimals),
    amountExcess: formatAmount(order.amountReceived > order.amount ? order.amountReceived - order.amount : 0n, decimals),
    amountRefunded: formatAmount(order.amountRefunded, decimals),
    paymentState: paymentStateOf(order.amount, order.amountReceived),
    currency: order.currency,
    chainId: order.chainId,
    protocol: order.protocol,
    address: order.address,
    paymentAddress: order.address,
    ...presentRoutes(ctx, order),
    paymentUrl: paymentUrlOf(ctx.config, order),
    status: order.status,
    metadata: (order.metadata ?? {}) as Record<string, unknown>,
    successUrl: order.successUrl,
    cancelUrl: order.cancelUrl,
    requiredConfirmations: order.requiredConfirmations,
    expiresAt: order.expiresAt.toISOString(),
    graceEndsAt: order.graceEndsAt.toISOString(),
    createdAt: order.createdAt.toISOString(),
    exceptions: [],
    resolution: null,
    resolvedBy: null,
    resolvedAt: null,
    resolutionReason: null,
    lateWindowEndsAt: null,
    unattributedPayments,
  };
  if (order.status === 'completed') {
    if (order.txHash) view.txHash = order.txHash;
    if (order.blockNumber !== null) view.blockNumber = order.blockNumber;
    if (order.confirmations !== null) view.confirmations = order.confirmations;
    if (order.completedAt) view.completedAt = order.completedAt.toISOString();
  }
  if (order.status === 'expired' && order.expiredAt) view.expiredAt = order.expiredAt.toISOString();
  view.exceptions = orderExceptions(order);
  view.resolution = order.status === 'completed' ? (order.resolution ?? 'automatic') : null;
  view.resolvedBy = order.resolvedBy;
  view.resolvedAt = order.resolvedAt?.toISOString() ?? null;
  view.resolutionReason = order.resolutionReason;
  view.lateWindowEndsAt = order.lateWindowEndsAt?.toISOString() ?? null;
  return view;
}
