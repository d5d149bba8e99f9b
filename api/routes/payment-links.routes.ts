import { Type } from '@sinclair/typebox';
import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { listQuerySchema, metadataSchema } from '../validation';
import { Nullable, StringEnum } from '../../core/platform/wire-schema';
import {
  LINK_PRICE_CURRENCIES,
  amountsCollected,
  archivePaymentLink,
  createPaymentLink,
  deletePaymentLink,
  getPaymentLink,
  LINK_LIMITS,
  LINK_SORT_FIELDS,
  LINK_STATUSES,
  listPaymentLinks,
  publishPaymentLink,
  updatePaymentLink,
  type PaymentLinkRow,
} from '../../core/payment-links/links';
import { paymentLinkSchema, presentPaymentLink } from '../../core/views/payment-link';

const currencies = Type.Array(
  Type.Object(
    {
      currency: Type.String({ minLength: 1, maxLength: 16, description: 'USDT, USDC or DAI, offered on the chain (INVALID_CURRENCY otherwise)' }),
      chainId: Type.String({ minLength: 1, maxLength: 64, description: 'An enabled chain (INVALID_CHAIN otherwise)' }),
    },
    { additionalProperties: false },
  ),
  { minItems: 1, maxItems: LINK_LIMITS.currenciesMax, description: 'The currency/chain pairs the payer picks from' },
);
const url = (what: string) => Type.String({ maxLength: 2048, description: `Absolute http(s) URL ${what}; default: the organization's ${what.includes('success') ? 'default_order_success_url' : 'default_order_cancel_url'}` });
const decimal = (description: string) => Type.String({ maxLength: 80, description });

/** Fields a change may send (PUT): each optional; null clears an optional one. */
const changeFields = {
  title: Type.String({ minLength: 1, maxLength: LINK_LIMITS.titleMax }),
  description: Nullable(Type.String({ maxLength: LINK_LIMITS.descriptionMax })),
  amount: decimal('Decimal string in token units, valid for every offered token\'s decimals (priceCurrency USD: dollars, at most 2 decimals); "0": the payer chooses the amount'),
  minAmount: Nullable(decimal('With amount "0": the least a payer may choose')),
  maxAmount: Nullable(decimal('With amount "0": the most a payer may choose')),
  currencies,
  priceCurrency: Nullable(StringEnum(LINK_PRICE_CURRENCIES), {
    description:
      'USD: the amount (and minAmount/maxAmount) are in dollars, at most 2 decimals; each checkout makes a USD order whose payer picks one of `currencies` as its route on the payment page (each must be a USD stablecoin route of this deployment: INVALID_CURRENCY naming the entry otherwise). null or absent: token units',
  }),
  inventoryTotal: Nullable(Type.Integer({ minimum: 1, maximum: LINK_LIMITS.inventoryMax, description: 'Units for sale: each order reserves one, expiry returns it, completion sells it' })),
  maxOpenOrders: Nullable(Type.Integer({ minimum: 1, description: 'Cap on the link\'s unpaid orders at once (each holds a pool address)' })),
  expiresAt: Nullable(Type.String({ format: 'date-time', description: 'In the future; past it the checkout answers 410' })),
  metadata: Type.Unsafe<Record<string, string | number | boolean | null>>({
    ...metadataSchema,
    maxProperties: LINK_LIMITS.metadataPairsMax,
    description: 'At most 9 pairs (as orders\' metadata; every order made from the link gets them plus paymentLinkId)',
  }),
  successUrl: Nullable(url('where the payer goes after a completed payment (success)')),
  cancelUrl: Nullable(url('where the payer goes after an expired order (cancel)')),
  slug: Type.String({ pattern: LINK_LIMITS.slugPattern, description: 'Your choice (unique across the service: 409 DUPLICATE_SLUG); default: 128 random bits' }),
};

const f = changeFields;
const createBody = Type.Object(
  {
    title: f.title,
    description: Type.Optional(f.description),
    amount: f.amount,
    minAmount: Type.Optional(f.minAmount),
    maxAmount: Type.Optional(f.maxAmount),
    currencies: f.currencies,
    priceCurrency: Type.Optional(f.priceCurrency),
    inventoryTotal: Type.Optional(f.inventoryTotal),
    maxOpenOrders: Type.Optional(f.maxOpenOrders),
    expiresAt: Type.Optional(f.expiresAt),
    metadata: Type.Optional(f.metadata),
    successUrl: Type.Optional(f.successUrl),
    cancelUrl: Type.Optional(f.cancelUrl),
    slug: Type.Optional(f.slug),
  },
  { additionalProperties: false },
);

const updateBody = Type.Partial(Type.Object(changeFields, { additionalProperties: false }), { additionalProperties: false });

const deleteAnswer = Type.Object({
  id: Type.String(),
  deleted: Type.Boolean({ description: 'true: the link is gone; false: orders were made from it, so it was archived instead' }),
  status: Type.Optional(StringEnum(['archived'])),
  paymentLink: Type.Optional(paymentLinkSchema),
});

const listQuery = listQuerySchema({
  sortBy: LINK_SORT_FIELDS,
  defaultSortBy: 'createdAt',
  filters: {
    status: Type.Optional(StringEnum(LINK_STATUSES)),
    search: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Case-insensitive substring of the title or slug' })),
  },
});

export function registerPaymentLinkRoutes(api: ApiBuilder, deps: ApiDeps): void {
  const present = async (organizationId: string, links: PaymentLinkRow[]) => {
    const collected = await amountsCollected(deps.db, organizationId, links.map((l) => l.id));
    return links.map((l) => presentPaymentLink(deps, l, collected));
  };
  const one = async (organizationId: string, link: PaymentLinkRow) => (await present(organizationId, [link]))[0];

  api.route(
    {
      method: 'post',
      path: '/payment-links',
      summary: 'Create a payment link (a draft; publish it to open its checkout page)',
      description:
        'A shareable checkout page at checkoutUrl: each visit that proceeds makes a fresh order (same rules as POST /orders) carrying the link\'s metadata and paymentLinkId; priceCurrency USD makes it a USD order (amount in dollars) whose payer picks one of currencies as its route on the payment page. 400 INVALID_CURRENCY / INVALID_CHAIN / INVALID_AMOUNT / VALIDATION_ERROR; 409 DUPLICATE_SLUG.',
      tag: 'Payment links',
      minRole: 'member',
      creates: true,
      successStatus: 201,
      body: createBody,
      response: paymentLinkSchema,
    },
    async ({ caller, body, reply }) => reply.created(await one(caller.organizationId, await createPaymentLink(deps, caller.organizationId, body)), 'Payment link created'),
  );

  api.route(
    {
      method: 'post',
      path: '/payment-links/:id/publish',
      summary: 'Publish a draft: its checkout page opens (status active)',
      description: '409 INVALID_STATUS_TRANSITION unless the link is a draft.',
      tag: 'Payment links',
      minRole: 'member',
      response: paymentLinkSchema,
    },
    async ({ caller, params, reply }) => reply.ok(await one(caller.organizationId, await publishPaymentLink(deps, caller.organizationId, params.id)), 'Payment link published'),
  );

  api.route(
    {
      method: 'post',
      path: '/payment-links/:id/archive',
      summary: 'Archive a link: no new orders (its page answers 410); open orders stay payable',
      description: '409 INVALID_STATUS_TRANSITION when already archived.',
      tag: 'Payment links',
      minRole: 'member',
      response: paymentLinkSchema,
    },
    async ({ caller, params, reply }) => reply.ok(await one(caller.organizationId, await archivePaymentLink(deps, caller.organizationId, params.id)), 'Payment link archived'),
  );

  api.route(
    {
      method: 'get',
      path: '/payment-links',
      summary: 'List payment links',
      description: 'Filters: status (draft, active, archived, expired, sold_out), search (title or slug). sortBy createdAt, updatedAt or title; ties by id.',
      tag: 'Payment links',
      minRole: 'viewer',
      query: listQuery,
      listOf: 'paymentLinks',
      response: paymentLinkSchema,
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listPaymentLinks(deps, caller.organizationId, query);
      return reply.list('paymentLinks', await present(caller.organizationId, items), { page: query.page, limit: query.limit, total });
    },
  );

  api.route(
    {
      method: 'get',
      path: '/payment-links/:id',
      summary: 'Get a payment link with its counters (orders, amount collected per token, inventory)',
      tag: 'Payment links',
      minRole: 'viewer',
      response: paymentLinkSchema,
    },
    async ({ caller, params, reply }) => reply.ok(await one(caller.organizationId, await getPaymentLink(deps.db, caller.organizationId, params.id))),
  );

  api.route(
    {
      method: 'put',
      path: '/payment-links/:id',
      summary: 'Change a payment link (fields sent change; null clears)',
      description:
        'A draft changes freely. A published link keeps amount, minAmount, maxAmount, currencies, priceCurrency and slug (409 PAYMENT_LINK_FROZEN: a payer never pays a price they did not see); title, description, inventory, expiry, redirects and metadata may change. An archived link is 409 INVALID_STATUS_TRANSITION.',
      tag: 'Payment links',
      minRole: 'member',
      body: updateBody,
      response: paymentLinkSchema,
    },
    async ({ caller, params, body, reply }) => reply.ok(await one(caller.organizationId, await updatePaymentLink(deps, caller.organizationId, params.id, body)), 'Payment link updated'),
  );

  api.route(
    {
      method: 'delete',
      path: '/payment-links/:id',
      summary: 'Delete a payment link (one with orders is archived instead)',
      description: 'A link no order was made from is deleted (deleted: true). One with orders is archived instead, so its orders keep their paymentLinkId (deleted: false, status archived, the link).',
      tag: 'Payment links',
      minRole: 'member',
      response: deleteAnswer,
    },
    async ({ caller, params, reply }) => {
      const outcome = await deletePaymentLink(deps, caller.organizationId, params.id);
      if (outcome.deleted) return reply.ok({ id: params.id, deleted: true }, 'Payment link deleted');
      return reply.ok(
        { id: params.id, deleted: false, status: 'archived', paymentLink: await one(caller.organizationId, outcome.link) },
        'Orders were made from this payment link, so it was archived instead of deleted',
      );
    },
  );
}
