import type { ApiBuilder, RouteSpec } from '../route-kit';
import type { ApiDeps } from '../deps';
import { CURRENCIES, PROTOCOLS, type Protocol } from '../../core/chains/registry';
import {
  bindDepositReference,
  registerDepositReference,
  unbindDepositAddress,
  unbindDepositReference,
} from '../../core/deposits/bindings';
import { getDeposit, getDepositReference, listDepositReferences, listDeposits, RECENT_DEPOSITS, type DepositListQuery } from '../../core/deposits/queries';
import { DEPOSIT_STATUSES } from '../../core/deposits/records';
import { validationError } from '../../core/errors';
import { listQuerySchema, metadataSchema, PAGE_QUERY_PROPERTIES, type JsonSchema } from '../validation';
import { WireFormat } from '../format';
import { presentBinding, presentRegistration } from '../deposits.present';
import { presentDeposit } from '../../core/deposits/records';

const TAG = 'Deposits';
const referenceSchema: JsonSchema = { type: 'string', minLength: 1, maxLength: 255, description: 'Caller-chosen reference (e.g. a user id), at most 255 characters' };
const protocolSchema: JsonSchema = { type: 'string', enum: PROTOCOLS };
const dateTime = { type: 'string', format: 'date-time' };
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' };

const DEPOSIT_STATES_DOC =
  'States: pending (seen on chain) → confirmed (required confirmations reached; event deposit.confirmed) → completed (block final by the chain\'s finality rule; no event). ' +
  'Extension: dropped — a pending deposit whose block was orphaned by a reorg; it never counted. A confirmed deposit is final.';
const TOTALS_DOC =
  'Totals count credited deposits only (confirmed and completed; pending and dropped are left out), including deposits received under an earlier binding of the same reference.';
const NOT_ENABLED_DOC =
  'A protocol family with no enabled chain on this deployment (tron and solana until their scanners ship) is 400 INVALID_CHAIN "not enabled": nothing is accepted that could never be seen.';

const depositSchema: JsonSchema = {
  type: 'object',
  description: DEPOSIT_STATES_DOC,
  properties: {
    depositId: { type: 'string', example: 'dep_01jd...' },
    id: { type: 'string', description: 'Same as depositId' },
    depositReference: { type: 'string' },
    amount: { type: 'string', example: '10.5' },
    currency: { type: 'string', enum: CURRENCIES },
    chainId: { type: 'string' },
    chain: { type: 'string', description: 'Same as chainId' },
    protocol: { type: 'string', enum: PROTOCOLS },
    address: { type: 'string' },
    fromAddress: { type: 'string' },
    txHash: { type: 'string' },
    logIndex: { type: 'integer' },
    blockNumber: { type: 'integer' },
    status: { type: 'string', enum: DEPOSIT_STATUSES },
    confirmations: { type: 'integer' },
    requiredConfirmations: { type: 'integer' },
    transferId: { type: 'string' },
    detectedAt: dateTime,
    confirmedAt: nullableDateTime,
    completedAt: nullableDateTime,
    droppedAt: nullableDateTime,
    metadata: { type: 'object' },
  },
};

const bindingSchema: JsonSchema = {
  type: 'object',
  properties: {
    depositReference: { type: 'string' },
    protocol: protocolSchema,
    address: { type: 'string' },
    depositAddress: { type: 'string', description: 'Same as address' },
    monitoredChains: { type: 'array', items: { type: 'string' } },
    monitoringTargets: {
      type: 'array',
      items: { type: 'object', properties: { chain: { type: 'string' }, contract: { type: 'string' }, token: { type: 'string' } } },
    },
    metadata: { type: 'object' },
    createdAt: dateTime,
    bindingCreatedAt: { ...dateTime, description: 'Same as createdAt' },
  },
};

const unbindData = {
  depositReference: { type: 'string' },
  unboundAddresses: { type: 'integer', description: 'Addresses released (each goes to cooldown for address_pool.unbind_cooldown_minutes)' },
  addresses: { type: 'array', items: { type: 'object', properties: { protocol: protocolSchema, address: { type: 'string' } } } },
};
/** A wraps the unbind result in its envelope; B answers flat with success and message. */
const unbindSchemas: { a: JsonSchema; b: JsonSchema } = {
  a: { type: 'object', properties: unbindData },
  b: { type: 'object', properties: { success: { type: 'boolean' }, message: { type: 'string' }, ...unbindData } },
};

const totalsFields = {
  totalDeposits: { type: 'integer', description: 'Credited (confirmed or completed) deposits' },
  lastDepositAt: nullableDateTime,
};
const amountByCurrency = { type: 'object', additionalProperties: { type: 'string' }, example: { USDT: '10.5', DAI: '1.000000000000000001' } };
const nominalTotal = { type: 'string', description: 'Face-value sum over all currencies (USD stablecoins added 1:1, exactly)', example: '11.5' };
const referenceDetailSchemas: { a: JsonSchema; b: JsonSchema } = {
  a: {
    type: 'object',
    properties: {
      ...(bindingSchema.properties as object),
      ...totalsFields,
      totalAmount: nominalTotal,
      totalAmountByCurrency: amountByCurrency,
      boundAt: dateTime,
      deposits: { type: 'array', items: depositSchema },
    },
  },
  b: {
    type: 'object',
    properties: {
      depositReference: { type: 'string' },
      protocols: { type: 'array', items: protocolSchema },
      addresses: {
        type: 'array',
        items: {
          type: 'object',
          properties: { currency: { type: 'string' }, chainId: { type: 'string' }, protocol: protocolSchema, address: { type: 'string' }, createdAt: dateTime },
        },
      },
      ...totalsFields,
      totalAmount: amountByCurrency,
      metadata: { type: 'object' },
      createdAt: dateTime,
    },
  },
};
const referenceItemA = {
  type: 'object',
  properties: {
    depositReference: { type: 'string' },
    protocol: protocolSchema,
    address: { type: 'string' },
    depositAddress: { type: 'string' },
    monitoredChains: { type: 'array', items: { type: 'string' } },
    ...totalsFields,
    totalAmount: nominalTotal,
    totalAmountByCurrency: amountByCurrency,
    boundAt: dateTime,
    metadata: { type: 'object' },
  },
};
const referenceItemB = {
  type: 'object',
  properties: {
    depositReference: { type: 'string' },
    protocols: { type: 'array', items: protocolSchema },
    addressCount: { type: 'integer' },
    ...totalsFields,
    totalAmount: amountByCurrency,
    metadata: { type: 'object' },
    createdAt: dateTime,
  },
};
/** A's list is data.references with total/page/limit (not a standard list); B's is a standard list. */
const referenceListDocs: { a: Partial<RouteSpec>; b: Partial<RouteSpec> } = {
  a: { response: { type: 'object', properties: { references: { type: 'array', items: referenceItemA }, total: { type: 'integer' }, page: { type: 'integer' }, limit: { type: 'integer' } } } },
  b: { response: referenceItemB, listOf: 'references' },
};

export function registerDepositRoutes(api: ApiBuilder, deps: ApiDeps): void {
  // Reference detail, list and unbind answers have per-style shapes (api/format.ts).
  const format = new WireFormat(deps.config.apiStyle);
  // --- Description A: bind / unbind (mounted in both styles) ------------------------------------
  api.route(
    {
      method: 'post',
      path: '/deposits/bind',
      summary: 'Bind a deposit reference to a permanent address of a protocol family',
      description:
        'One pool address per reference and family, monitored on every enabled chain of the family for every offered currency; it never expires. ' +
        'A new binding is 201; binding a reference already bound on that family returns the existing binding with 200 (metadata unchanged). ' +
        `${NOT_ENABLED_DOC} An empty pool is 503 NO_AVAILABLE_ADDRESSES and nothing is stored.`,
      tag: TAG,
      minRole: 'member',
      creates: true,
      successStatus: 201,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['depositReference', 'protocol'],
        properties: { depositReference: referenceSchema, protocol: protocolSchema, metadata: metadataSchema },
      },
      response: bindingSchema,
    },
    async ({ caller, body, reply }) => {
      const { binding, created } = await bindDepositReference(deps, caller.organizationId, body);
      const data = presentBinding(binding);
      return created ? reply.created(data, 'Deposit reference bound') : reply.ok(data, 'Deposit reference already bound');
    },
  );

  api.route(
    {
      method: 'post',
      path: '/deposits/unbind',
      summary: 'Unbind a deposit reference (all its families, or one) or the reference holding an address',
      description:
        'Body {depositReference} unbinds every family of the reference ({depositReference, protocol}: that family only); {address, protocol} unbinds the reference holding that address. ' +
        'Each released address goes to cooldown for address_pool.unbind_cooldown_minutes. Unknown: 404 DEPOSIT_REFERENCE_NOT_FOUND.',
      tag: TAG,
      minRole: 'member',
      body: {
        type: 'object',
        additionalProperties: false,
        properties: { depositReference: referenceSchema, address: { type: 'string', minLength: 1, maxLength: 128 }, protocol: protocolSchema },
      },
      response: format.documented(unbindSchemas),
    },
    async ({ caller, body, reply }) => {
      const input = body as { depositReference?: string; address?: string; protocol?: Protocol };
      let result;
      if (input.depositReference !== undefined && input.address === undefined) {
        result = await unbindDepositReference(deps, caller.organizationId, { depositReference: input.depositReference, protocol: input.protocol });
      } else if (input.address !== undefined && input.protocol !== undefined && input.depositReference === undefined) {
        result = await unbindDepositAddress(deps, caller.organizationId, { address: input.address, protocol: input.protocol });
      } else {
        throw validationError('Send either {depositReference} or {address, protocol}', [{ field: '(body)', message: 'needs depositReference, or address and protocol' }]);
      }
      return reply.raw(200, format.depositUnbindBody(result, `Unbound ${result.unboundAddresses} address(es)`));
    },
  );

  // --- References: list and detail (both descriptions, shape per style) ------------------------
  api.route(
    {
      method: 'get',
      path: '/deposits/references',
      summary: 'List deposit references',
      description:
        'Filters: depositReference (exact), protocol, search (substring of the reference, case-insensitive). Newest first by default (sortOrder). ' +
        'Style A: data.references (one item per bound family: depositReference, protocol, depositAddress, totalDeposits, totalAmount, lastDepositAt, boundAt) with total, page, limit. ' +
        `Style B: data (one item per reference: depositReference, protocols, addressCount, totalDeposits, totalAmount keyed by currency, lastDepositAt) and pagination. ${TOTALS_DOC}`,
      tag: TAG,
      minRole: 'viewer',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...PAGE_QUERY_PROPERTIES,
          sortOrder: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
          depositReference: referenceSchema,
          protocol: protocolSchema,
          search: { type: 'string', minLength: 1, maxLength: 255 },
        },
      },
      ...format.documented(referenceListDocs),
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listDepositReferences(deps, caller.organizationId, query);
      return reply.raw(200, format.depositReferenceList(items, { page: query.page, limit: query.limit, total }));
    },
  );

  api.route(
    {
      method: 'get',
      path: '/deposits/references/:depositReference',
      summary: 'A deposit reference with its totals',
      description:
        'Style A: the earliest-bound family (or ?protocol=): depositReference, protocol, address, depositAddress, monitoredChains, boundAt, totalDeposits, ' +
        'totalAmount (ONE decimal string: the face-value sum over currencies — all are USD stablecoins, added 1:1 exactly — equal to the single currency\'s sum when there is one, "0" when none), ' +
        `totalAmountByCurrency, lastDepositAt, and deposits (the ${RECENT_DEPOSITS} most recent, not dropped). ` +
        `Style B: depositReference, protocols, addresses [{currency, chainId, protocol, address, createdAt}], totalDeposits, totalAmount keyed by currency, lastDepositAt, metadata. ${TOTALS_DOC} ` +
        'Unknown or unbound: 404 DEPOSIT_REFERENCE_NOT_FOUND.',
      tag: TAG,
      minRole: 'viewer',
      query: { type: 'object', additionalProperties: false, properties: { protocol: protocolSchema } },
      response: format.documented(referenceDetailSchemas),
    },
    async ({ caller, params, query, reply }) => {
      const detail = await getDepositReference(deps, caller.organizationId, params.depositReference, query);
      return reply.raw(200, format.depositReferenceBody(detail));
    },
  );

  // --- Description B: register / delete (mounted in both styles) --------------------------------
  api.route(
    {
      method: 'post',
      path: '/deposits/references',
      summary: 'Register a deposit reference on one currency and chain',
      description:
        'The first registration of a reference on a protocol family binds a permanent pool address; another chain of the same family reuses that address. ' +
        'The address is monitored for every offered currency on every enabled chain of its family whatever the currency given. ' +
        'The same reference on the same chain again: 409 DUPLICATE_DEPOSIT_REFERENCE. Metadata is set when the family is first bound. ' +
        `Unknown or not enabled chain: 400 INVALID_CHAIN; currency not offered there: 400 INVALID_CURRENCY. Empty pool: 503 NO_AVAILABLE_ADDRESSES, nothing stored.`,
      tag: TAG,
      minRole: 'member',
      creates: true,
      successStatus: 201,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['depositReference', 'currency', 'chainId'],
        properties: {
          depositReference: referenceSchema,
          currency: { type: 'string', minLength: 1, maxLength: 16 },
          chainId: { type: 'string', minLength: 1, maxLength: 64 },
          metadata: metadataSchema,
        },
      },
      response: {
        type: 'object',
        properties: {
          depositReference: { type: 'string' },
          currency: { type: 'string' },
          chainId: { type: 'string' },
          protocol: protocolSchema,
          address: { type: 'string' },
          monitoredChains: { type: 'array', items: { type: 'string' } },
          metadata: { type: 'object' },
          createdAt: dateTime,
        },
      },
    },
    async ({ caller, body, reply }) => {
      const { binding, registration } = await registerDepositReference(deps, caller.organizationId, body);
      return reply.created(presentRegistration(binding, registration), 'Deposit reference registered');
    },
  );

  api.route(
    {
      method: 'delete',
      path: '/deposits/references/:depositReference',
      summary: 'Unbind a deposit reference (all chains, or one with ?chainId=)',
      description:
        'Without chainId every family of the reference is unbound. With chainId only that chain\'s registration is removed; the family\'s address is released only when no chain of the family remains registered ' +
        '(a family-wide binding made with POST /deposits/bind has no per-chain registrations: 409 CONFLICT, unbind it without chainId). ' +
        'Released addresses go to cooldown for address_pool.unbind_cooldown_minutes; unboundAddresses counts them.',
      tag: TAG,
      minRole: 'member',
      query: { type: 'object', additionalProperties: false, properties: { chainId: { type: 'string', minLength: 1, maxLength: 64 } } },
      response: format.documented(unbindSchemas),
    },
    async ({ caller, params, query, reply }) => {
      const result = await unbindDepositReference(deps, caller.organizationId, { depositReference: params.depositReference, chainId: query.chainId });
      const message = result.unboundAddresses > 0 ? `Unbound ${result.unboundAddresses} address(es)` : `Removed ${query.chainId}; the address stays bound for the other chains`;
      return reply.raw(200, format.depositUnbindBody(result, message));
    },
  );

  // --- Deposits ---------------------------------------------------------------------------------
  api.route(
    {
      method: 'get',
      path: '/deposits',
      summary: 'List deposits',
      description: `${DEPOSIT_STATES_DOC} sortBy amount compares amounts at face value across tokens of different decimals.`,
      tag: TAG,
      minRole: 'viewer',
      query: listQuerySchema({
        sortBy: ['detectedAt', 'amount', 'confirmedAt'],
        defaultSortBy: 'detectedAt',
        filters: {
          depositReference: referenceSchema,
          status: { type: 'string', enum: DEPOSIT_STATUSES },
          currency: { type: 'string', enum: CURRENCIES },
          chainId: { type: 'string', minLength: 1, maxLength: 64 },
        },
      }),
      response: depositSchema,
      listOf: 'deposits',
    },
    async ({ caller, query, reply }) => {
      const q = query as DepositListQuery;
      const { items, total } = await listDeposits(deps, caller.organizationId, q);
      return reply.list('deposits', items.map(presentDeposit), { page: q.page, limit: q.limit, total });
    },
  );

  api.route(
    {
      method: 'get',
      path: '/deposits/:depositId',
      summary: 'One deposit',
      description: `${DEPOSIT_STATES_DOC} Unknown: 404 RESOURCE_NOT_FOUND.`,
      tag: TAG,
      minRole: 'viewer',
      response: depositSchema,
    },
    async ({ caller, params, reply }) => reply.ok(presentDeposit(await getDeposit(deps, caller.organizationId, params.depositId))),
  );
}
