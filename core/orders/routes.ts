import { and, eq } from 'drizzle-orm';
import type { Tx } from '../../db/client';
import { orders, type ChosenOrderRoute, type OrderRouteOffer } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { AppError, isUniqueViolation, notFound, validationError } from '../platform/errors';
import { parseAmount } from '../platform/amounts';
import { newId } from '../platform/ids';
import { countOrderTransition } from '../platform/metrics';
import { isUsdStablecoin, USD, USD_DECIMALS, type Chain, type ChainRegistry, type Protocol } from '../chains/registry';
import { effectiveConfirmations } from '../chains/confirmation-policy';
import { getConfigValues, routeList, USD_ROUTES_KEY } from '../organizations/org-config';
import { allocatePoolAddress } from '../pool/allocation';
import { tokenUnitsInUsd, type OrderRow } from '../views/order';
import { newPayToken } from './pay-token';
import {
  assertWithinMaximum,
  createOrder,
  checkedOrderTerms,
  duplicateReference,
  findIdByReference,
  PAYMENT_WINDOW_MINUTES,
  type CreateOrderInput,
} from './orders';

/**
 * Orders priced in USD whose payer picks the route (issue 41; Coinbase's, Stripe's and BTCPay's
 * checkouts): the merchant prices an order in dollars and offers routes, a USD stablecoin on a chain
 * each. The order has no address until a route is chosen (on its payment page, or by the merchant's
 * server with POST /orders/:id/route); choosing takes an address from that family's pool and starts
 * the payment window. The payer may switch before paying: the order keeps every route it was given,
 * and its address, until it ends, so a payment that still arrives on an earlier route counts, in
 * that route's token. One address per family: switching between two EVM routes keeps the address
 * (an EVM address is the same on every EVM chain), so an order holds at most one address of each
 * family, and a payer's switching never takes more than that from the pool.
 * Amounts: the order's are base units of USD (USD_DECIMALS, 18); a route's token amount is the
 * order's converted to the token's decimals (exact: a USD amount has at most 2 decimals, a route
 * token at least 2), and a payment in any route's token converts to USD units exactly (at most 18).
 */

/** The fewest decimals a route token may have: a USD amount has cents. */
const MIN_ROUTE_DECIMALS = 2;

/** A route of this deployment, with what the page and the API show of it. */
export interface RouteOption extends OrderRouteOffer {
  chainName: string;
  protocol: Protocol;
  decimals: number;
}

/** Every USD stablecoin on every enabled chain of the deployment, in registry order. */
export function deploymentUsdRoutes(registry: ChainRegistry): RouteOption[] {
  return registry
    .list()
    .filter((chain) => chain.enabled)
    .flatMap((chain) =>
      registry
        .offeredTokens(chain)
        .filter((t) => isUsdStablecoin(t) && t.decimals >= MIN_ROUTE_DECIMALS && t.decimals <= USD_DECIMALS)
        .map((t) => ({ currency: t.currency, chainId: chain.chainId, chainName: chain.name, protocol: chain.protocol, decimals: t.decimals })),
    );
}

const sameRoute = (a: OrderRouteOffer, b: OrderRouteOffer) => a.currency === b.currency && a.chainId === b.chainId;

/**
 * The routes a new USD order offers: those asked for, each one this deployment has (INVALID_CHAIN or
 * INVALID_CURRENCY naming it otherwise), duplicates dropped; none asked for, the organization's
 * usd_routes among the deployment's, else all of the deployment's.
 */
export function routesOffered(registry: ChainRegistry, asked: readonly OrderRouteOffer[] | undefined, organizationRoutes: OrderRouteOffer[] | null): OrderRouteOffer[] {
  const available = deploymentUsdRoutes(registry);
  if (asked !== undefined) {
    if (asked.length === 0) throw validationError('routes must list at least one {currency, chainId}', [{ field: 'routes', message: 'must not be empty' }]);
    const out: OrderRouteOffer[] = [];
    for (const [i, route] of asked.entries()) {
      if (!available.some((r) => sameRoute(r, route))) {
        const chain = registry.requireOfferedChain(route.chainId);
        const token = registry.requireToken(chain, route.currency);
        throw new AppError('INVALID_CURRENCY', `routes[${i}]: ${token.currency} on ${chain.chainId} is not a USD stablecoin a USD order can be paid in`, [
          { field: `routes[${i}]`, message: 'not a USD stablecoin route of this deployment' },
        ]);
      }
      if (!out.some((r) => sameRoute(r, route))) out.push({ currency: route.currency, chainId: route.chainId });
    }
    return out;
  }
  const chosen = organizationRoutes ? available.filter((r) => organizationRoutes.some((o) => sameRoute(o, r))) : available;
  if (chosen.length === 0) {
    throw new AppError('INVALID_CURRENCY', `No USD stablecoin route is available for a USD order${organizationRoutes ? ` among the organization's ${USD_ROUTES_KEY}` : ''}`);
  }
  return chosen.map(({ currency, chainId }) => ({ currency, chainId }));
}

export interface CreateUsdOrderInput extends Omit<CreateOrderInput, 'chainId'> {
  routes?: OrderRouteOffer[];
}

/**
 * Creates a USD order: no address yet, its window counted from now until a route is chosen (the
 * choice starts it again). The reference is unique per organization as for any order (409 with the
 * existing id). The amount is in dollars, at most 2 decimals, within max_order_amount.
 */
export async function createUsdOrder(ctx: ServiceContext, organizationId: string, input: CreateUsdOrderInput, fromLink?: { paymentLinkId: string }): Promise<OrderRow> {
  const amount = parseAmount(input.amount, 2);
  const usd = tokenUnitsInUsd(amount, 2);
  const { graceMinutes, paymentLinkId, metadata } = checkedOrderTerms(input, fromLink);
  const settings = await getConfigValues(ctx.db, organizationId, ['payment_window_minutes', 'confirmations.orders', USD_ROUTES_KEY]);
  const routes = routesOffered(ctx.registry, input.routes, routeList(settings.get(USD_ROUTES_KEY) ?? null));
  await assertWithinMaximum(ctx.db, organizationId, usd, USD_DECIMALS);
  const windowMinutes = input.paymentWindowMinutes ?? (Number(settings.get('payment_window_minutes')) || PAYMENT_WINDOW_MINUTES.fallback);
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + windowMinutes * 60_000);
  // Until a route is chosen, the most any offered route asks (the choice sets its own).
  const organizationConfirmations = settings.get('confirmations.orders') as number | null;
  const requiredConfirmations = Math.max(...routes.map((r) => effectiveConfirmations(ctx.registry.requireOfferedChain(r.chainId).orderConfirmations, organizationConfirmations)));
  try {
    const [order] = await ctx.db
      .insert(orders)
      .values({
        id: newId('ord'),
        organizationId,
        orderReference: input.orderReference,
        payToken: newPayToken(),
        amount: usd,
        currency: USD,
        status: 'pending',
        successUrl: input.successUrl ?? null,
        cancelUrl: input.cancelUrl ?? null,
        metadata,
        paymentLinkId,
        paymentWindowMinutes: windowMinutes,
        graceMinutes,
        requiredConfirmations,
        expiresAt,
        graceEndsAt: new Date(expiresAt.getTime() + graceMinutes * 60_000),
        createdAt: now,
        updatedAt: now,
        routes,
        chosenRoutes: [],
      })
      .returning();
    countOrderTransition('pending');
    return order;
  } catch (err) {
    if (isUniqueViolation(err, 'orders_org_reference_uq')) {
      const existing = await findIdByReference(ctx.db, organizationId, input.orderReference);
      if (existing) throw duplicateReference(input.orderReference, existing);
    }
    throw err;
  }
}

/** An order of either pricing, as POST /orders takes it: a token order names its chain, a USD order (currency USD) its routes (or none: the defaults). */
export type PlaceOrderInput = Omit<CreateOrderInput, 'chainId'> & { chainId?: string; routes?: OrderRouteOffer[] };

/**
 * Creates an order of either pricing: currency USD makes a USD order (createUsdOrder), anything else
 * a token order on its chain (createOrder). A field of the other pricing is a validation error.
 */
export async function placeOrder(ctx: ServiceContext, organizationId: string, input: PlaceOrderInput, fromLink?: { paymentLinkId: string }): Promise<OrderRow> {
  const { chainId, routes, ...rest } = input;
  if (input.currency === USD) {
    if (chainId !== undefined) {
      throw validationError('A USD order has no chainId: its payer picks the route (give routes: [{currency, chainId}], or none for every route this deployment offers)', [
        { field: 'chainId', message: 'not allowed with currency USD' },
      ]);
    }
    return createUsdOrder(ctx, organizationId, { ...rest, routes }, fromLink);
  }
  if (routes !== undefined) {
    throw validationError('routes belong to an order priced in USD (currency "USD"); a token order names its chainId', [{ field: 'routes', message: 'only with currency USD' }]);
  }
  if (chainId === undefined) {
    throw validationError('chainId is required for an order priced in a token (or use currency "USD" with routes)', [{ field: 'chainId', message: 'is required' }]);
  }
  return createOrder(ctx, organizationId, { ...rest, chainId }, fromLink);
}

/** Who chose a route: the merchant's server (API) or the payer (the payment page). */
export type RouteChooser = { organizationId: string } | { payToken: string };

/**
 * Chooses (or switches to) one of a USD order's routes, in one transaction under the order's lock:
 * - the route must be one the order offers (INVALID_CURRENCY), the order pending (ORDER_ALREADY_PAID,
 *   ORDER_EXPIRED) and its window open (ORDER_EXPIRED);
 * - a route it had before becomes current again; a new one of a family it already holds an address
 *   of uses that address; otherwise an address of the family is taken from the pool
 *   (NO_AVAILABLE_ADDRESSES when empty, nothing changed);
 * - the first choice starts the payment window (a switch keeps it: switching never extends an order);
 * - the current route is again the same one: nothing changes.
 * A token order is 409 CONFLICT: its route was fixed at creation.
 */
export async function chooseOrderRoute(ctx: ServiceContext, by: RouteChooser, orderId: string | null, route: OrderRouteOffer): Promise<OrderRow> {
  return ctx.db.transaction(async (tx) => {
    const [order] = await tx
      .select()
      .from(orders)
      .where('payToken' in by ? eq(orders.payToken, by.payToken) : and(eq(orders.id, orderId ?? ''), eq(orders.organizationId, by.organizationId)))
      .for('update');
    if (!order) throw notFound('Order');
    const offered = order.routes;
    if (!offered) throw new AppError('CONFLICT', `Order ${order.id} is priced in ${order.currency} on ${order.chainId}: only a USD order has routes to choose`);
    if (order.status === 'completed') throw new AppError('ORDER_ALREADY_PAID', `Order ${order.id} is already completed`);
    const now = ctx.clock.now();
    if (order.status === 'expired' || now.getTime() >= order.expiresAt.getTime()) throw new AppError('ORDER_EXPIRED', `Order ${order.id}'s payment window has ended`);
    if (!offered.some((r) => sameRoute(r, route))) {
      throw new AppError('INVALID_CURRENCY', `${route.currency} on ${route.chainId} is not one of this order's routes: ${offered.map((r) => `${r.currency} on ${r.chainId}`).join(', ')}`, [
        { field: 'currency', message: 'not one of the order\'s routes' },
      ]);
    }
    if (order.chainId === route.chainId && order.routeCurrency === route.currency) return order;
    const chain = ctx.registry.requireOfferedChain(route.chainId);
    ctx.registry.requireToken(chain, route.currency);
    const chosen = order.chosenRoutes ?? [];
    const given = chosen.find((r) => sameRoute(r, route)) ?? (await newRoute(tx, ctx, order, chain, route, chosen, now));
    const first = chosen.length === 0;
    const expiresAt = first ? new Date(now.getTime() + order.paymentWindowMinutes * 60_000) : order.expiresAt;
    const [updated] = await tx
      .update(orders)
      .set({
        chainId: given.chainId,
        protocol: given.protocol,
        address: given.address,
        poolAddressId: given.poolAddressId,
        routeCurrency: given.currency,
        requiredConfirmations: given.requiredConfirmations,
        chosenRoutes: chosen.some((r) => sameRoute(r, given)) ? chosen : [...chosen, given],
        expiresAt,
        graceEndsAt: first ? new Date(expiresAt.getTime() + order.graceMinutes * 60_000) : order.graceEndsAt,
        updatedAt: now,
      })
      .where(eq(orders.id, order.id))
      .returning();
    ctx.logger.info({ orderId: order.id, chainId: given.chainId, currency: given.currency, address: given.address, switched: !first }, 'order route chosen');
    return updated;
  });
}

/** A route the order had not been given: its family's address (the order's own, else one taken from the pool) and its confirmations. */
async function newRoute(tx: Tx, ctx: ServiceContext, order: OrderRow, chain: Chain, route: OrderRouteOffer, chosen: ChosenOrderRoute[], now: Date): Promise<ChosenOrderRoute> {
  const held = chosen.find((r) => r.protocol === chain.protocol);
  const address =
    held ?? (await allocatePoolAddress(tx, { organizationId: order.organizationId, protocol: chain.protocol, holder: { kind: 'order', orderId: order.id }, now }));
  const organizationConfirmations = (await getConfigValues(tx, order.organizationId, ['confirmations.orders'])).get('confirmations.orders');
  return {
    currency: route.currency,
    chainId: chain.chainId,
    protocol: chain.protocol,
    address: address.address,
    poolAddressId: address.poolAddressId,
    requiredConfirmations: effectiveConfirmations(chain.orderConfirmations, organizationConfirmations as number | null),
    chosenAt: now.toISOString(),
    received: '0',
  };
}
