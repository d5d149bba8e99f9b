import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { Type } from '@sinclair/typebox';
import { listQuerySchema, metadataSchema } from '../validation';
import { SEARCH_MAX_LENGTH } from '../../core/chains/search-term';
import { StringEnum } from '../../core/platform/wire-schema';
import { chooseOrderRoute, placeOrder } from '../../core/orders/routes';
import {
  getOrder,
  getOrderByReference,
  listOrders,
  GRACE_MINUTES,
  ORDER_REFERENCE_MAX,
  ORDER_SORT_FIELDS,
  PAYMENT_WINDOW_MINUTES,
} from '../../core/orders/orders';
import { ORDER_EXCEPTIONS, orderSchema, PAYMENT_STATES, presentOrder } from '../../core/views/order';
import { presentOrdersWithPayments, presentOrderWithPayments } from '../../core/orders/exceptions';
import { resolveOrder } from '../../core/reconciliation/resolve-order';
import { apiKeyActor, REASON_MAX_LENGTH } from '../../core/reconciliation/actor';


const createOrderBody = Type.Object(
  {
    orderReference: Type.String({
      minLength: 1,
      maxLength: ORDER_REFERENCE_MAX,
      pattern: '^[^\\u0000-\\u001f\\u007f]+$',
      description: 'Your identifier, unique per organization (409 DUPLICATE_ORDER_REFERENCE with existingOrderId otherwise)',
    }),
    // Any JSON value: the core answers anything but a decimal string with INVALID_AMOUNT.
    amount: Type.Unknown({
      description: 'Positive decimal string in token units, at most the token\'s decimals, e.g. "10.50" (INVALID_AMOUNT otherwise)',
      examples: ['10.50'],
    }),
    currency: Type.String({
      minLength: 1,
      maxLength: 16,
      description:
        'A token symbol the chain offers (GET /chains: USDT, USDC, DAI, or one the chains file adds), INVALID_CURRENCY otherwise; or USD: an order priced in dollars (amount with at most 2 decimals) whose payer picks the route (token and network) on its payment page, or your server with POST /orders/{id}/route',
    }),
    chainId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'A token order: an enabled chain, e.g. ethereum-sepolia (INVALID_CHAIN otherwise). Not with currency USD' }),
    ),
    routes: Type.Optional(
      Type.Array(Type.Object({ currency: Type.String({ minLength: 1, maxLength: 16 }), chainId: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }), {
        minItems: 1,
        maxItems: 100,
        description:
          'currency USD only: the routes its payer may pick, each a USD stablecoin on an enabled chain (INVALID_CURRENCY otherwise). Default: the organization\'s usd_routes, else every USD stablecoin on every enabled chain',
      }),
    ),
    successUrl: Type.Optional(Type.String({ maxLength: 2048, description: 'Absolute http(s) URL; the payer is sent there after completion' })),
    cancelUrl: Type.Optional(Type.String({ maxLength: 2048, description: 'Absolute http(s) URL; the payer is sent there after expiry' })),
    metadata: Type.Optional(metadataSchema),
    paymentWindowMinutes: Type.Optional(
      Type.Integer({
        minimum: PAYMENT_WINDOW_MINUTES.min,
        maximum: PAYMENT_WINDOW_MINUTES.max,
        description: 'Default: the organization\'s payment_window_minutes, else 10',
      }),
    ),
    graceMinutes: Type.Optional(
      Type.Integer({
        minimum: GRACE_MINUTES.min,
        maximum: GRACE_MINUTES.max,
        description: 'Extra minutes after the window in which mined payments still count (default 5)',
      }),
    ),
  },
  { additionalProperties: false },
);

/** GET /orders' filters, which its CSV export (exports.routes.ts) takes too. */
export const ORDER_LIST_FILTERS = {
    status: Type.Optional(StringEnum(['pending', 'completed', 'expired'])),
    currency: Type.Optional(Type.String({ maxLength: 16 })),
    chainId: Type.Optional(Type.String({ maxLength: 64 })),
    orderReference: Type.Optional(Type.String({ minLength: 1, maxLength: ORDER_REFERENCE_MAX, description: 'Case-insensitive substring search' })),
    search: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: SEARCH_MAX_LENGTH,
        description:
          'One box for an order id (ord_…), a payment\'s transaction hash (EVM or Tron hex, Solana signature), the order\'s payment address (EVM, Tron or Solana; an EVM address in any case), or else part of the orderReference (case-insensitive). An address-shaped text that is not a valid address (EVM checksum, Tron base58check) is 400 VALIDATION_ERROR. Combines with the other filters and with paging.',
      }),
    ),
    paymentState: Type.Optional(StringEnum(PAYMENT_STATES, { description: 'Derived payment state, e.g. partial: orders that received less than their amount' })),
    exception: Type.Optional(
      StringEnum(ORDER_EXCEPTIONS, { description: 'Orders with this exception (see exceptions): underpaid, overpaid, paidLate, unattributedPayments or manual' }),
    ),
};

const listQuery = listQuerySchema({ sortBy: ORDER_SORT_FIELDS, defaultSortBy: 'createdAt', filters: ORDER_LIST_FILTERS });

const routeBody = Type.Object(
  {
    currency: Type.String({ minLength: 1, maxLength: 16, description: 'The route\'s token, e.g. USDT' }),
    chainId: Type.String({ minLength: 1, maxLength: 64, description: 'The route\'s chain, e.g. tron-mainnet' }),
  },
  { additionalProperties: false },
);

const resolveBody = Type.Object(
  {
    status: StringEnum(['completed'] as const, { description: 'What the order becomes: completed (settled by hand)' }),
    reason: Type.String({ minLength: 1, maxLength: REASON_MAX_LENGTH, description: 'Why, in your words (e.g. "paid by bank transfer"): kept on the order and in the audit log' }),
  },
  { additionalProperties: false },
);

export function registerOrderRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
    {
      method: 'post',
      path: '/orders',
      summary: 'Create an order (allocates a payment address from the pool)',
      description:
        'Validation errors store and allocate nothing. metadata may not have a paymentLinkId key (400 VALIDATION_ERROR): only a payment link\'s checkout sets it, on the orders it makes. 409 DUPLICATE_ORDER_REFERENCE (body has existingOrderId); 503 NO_AVAILABLE_ADDRESSES when the pool of the chain\'s protocol is empty. amountReceived is the sum of the counted, non-dropped transfers.',
      tag: 'Orders',
      minRole: 'member',
      creates: true,
      successStatus: 201,
      body: createOrderBody,
      response: orderSchema,
    },
    async ({ caller, body, reply }) => {
      const order = await placeOrder(deps, caller.organizationId, body);
      return reply.created(presentOrder(deps, order), 'Order created');
    },
  );

  api.route(
    {
      method: 'post',
      path: '/orders/:orderId/route',
      summary: 'Choose the route of a USD order (token and network)',
      description:
        'For an order priced in USD: the route (one of its routes) its payer will pay by, as if the payer picked it on the payment page. The first choice takes an address of the route\'s family from the pool and starts the payment window; a later one switches (the window is kept). The order keeps every route it was given until it ends: a payment still made by an earlier route counts, in that route\'s token. Choosing the current route again changes nothing. 409 CONFLICT for a token order; 400 ORDER_EXPIRED once its window ended, ORDER_ALREADY_PAID when completed; 400 INVALID_CURRENCY for a route it does not offer; 503 NO_AVAILABLE_ADDRESSES when the family\'s pool is empty (nothing changes).',
      tag: 'Orders',
      minRole: 'member',
      creates: true,
      body: routeBody,
      response: orderSchema,
    },
    async ({ caller, params, body, reply }) => {
      const order = await chooseOrderRoute(deps, { organizationId: caller.organizationId }, params.orderId, body);
      return reply.ok(await presentOrderWithPayments(deps, order), 'Route chosen');
    },
  );

  api.route(
    {
      method: 'get',
      path: '/orders/by-reference/:orderReference',
      summary: 'Get an order by your orderReference (same body as GET /orders/{orderId})',
      tag: 'Orders',
      minRole: 'viewer',
      response: orderSchema,
    },
    async ({ caller, params, reply }) => reply.ok(await presentOrderWithPayments(deps, await getOrderByReference(deps.db, caller.organizationId, params.orderReference))),
  );

  api.route(
    {
      method: 'get',
      path: '/orders/:orderId',
      summary: 'Get an order',
      description: 'txHash, blockNumber, confirmations and completedAt appear on completed orders; expiredAt on expired ones.',
      tag: 'Orders',
      minRole: 'viewer',
      response: orderSchema,
    },
    async ({ caller, params, reply }) => reply.ok(await presentOrderWithPayments(deps, await getOrder(deps.db, caller.organizationId, params.orderId))),
  );

  api.route(
    {
      method: 'post',
      path: '/orders/:orderId/resolve',
      summary: 'Settle an order by hand',
      description:
        'For a pending or expired order paid in a way the service could not credit (off-chain, outside its window, a payment it could not attribute): it becomes completed with resolution "manual", resolvedBy, resolvedAt and resolutionReason, and order.completed is sent. 409 CONFLICT for an order already completed (by its payments or by hand). The audit log records it. Admin and Owner.',
      tag: 'Orders',
      minRole: 'admin',
      creates: true,
      body: resolveBody,
      response: orderSchema,
    },
    async ({ caller, params, body, req, reply }) => {
      const order = await resolveOrder(deps, apiKeyActor(caller.organizationId, caller.keyId, req.ip ?? null), params.orderId, body);
      return reply.ok(await presentOrderWithPayments(deps, order), 'Order settled by hand');
    },
  );

  api.route(
    {
      method: 'get',
      path: '/orders',
      summary: 'List orders',
      description: 'Filters: search (order id, tx hash, address or reference), status, currency, chainId, orderReference (substring), paymentState (derived: unpaid, partial, paid, overpaid). sortBy createdAt, amount (in token units) or expiresAt; ties by orderId.',
      tag: 'Orders',
      minRole: 'viewer',
      query: listQuery,
      listOf: 'orders',
      response: orderSchema,
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listOrders(deps, caller.organizationId, query);
      return reply.list('orders', await presentOrdersWithPayments(deps, items), { page: query.page, limit: query.limit, total });
    },
  );
}
