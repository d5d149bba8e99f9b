import { Type } from '@sinclair/typebox';
import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { PROTOCOLS } from '../../core/chains/registry';
import { currencySymbolSchema } from '../../core/views/chain';
import {
  bindDepositReference,
  registerDepositReference,
  unbindDepositAddress,
  unbindDepositReference,
} from '../../core/deposits/bindings';
import { getDeposit, getDepositReference, listDepositReferences, listDeposits, RECENT_DEPOSITS } from '../../core/deposits/queries';
import { DEPOSIT_STATUSES } from '../../core/views/deposit';
import { validationError } from '../../core/platform/errors';
import { StringEnum } from '../../core/platform/wire-schema';
import { DEPOSIT_STATES_DOC, depositSchema, presentDeposit } from '../../core/views/deposit';
import { bindingSchema, presentBinding, presentRegistration, registrationSchema } from '../../core/views/deposit-reference';
import { listQuerySchema, metadataSchema, pageQuerySchema } from '../validation';
import {
  referenceDetailAnswer,
  referenceDetailSchemas,
  referenceListAnswer,
  referenceListDocs,
  unbindAnswer,
  unbindSchemas,
} from '../presenters/deposits';

const TAG = 'Deposits';
const referenceSchema = Type.String({ minLength: 1, maxLength: 255, description: 'Caller-chosen reference (e.g. a user id), at most 255 characters' });
const protocolSchema = StringEnum(PROTOCOLS);
const chainIdInput = Type.String({ minLength: 1, maxLength: 64 });

/** GET /deposits' filters, which its CSV export (exports.routes.ts) takes too. */
export const DEPOSIT_LIST_FILTERS = {
  depositReference: Type.Optional(referenceSchema),
  status: Type.Optional(StringEnum(DEPOSIT_STATUSES)),
  currency: Type.Optional(currencySymbolSchema()),
  chainId: Type.Optional(chainIdInput),
};

const TOTALS_DOC =
  'Totals count credited deposits only (confirmed and completed; pending and dropped are left out), including deposits received under an earlier binding of the same reference.';
/** Which families bind here, from the deployment's registry (never written by hand: it changes as families ship). */
function notEnabledDoc(deps: ApiDeps): string {
  const enabled = PROTOCOLS.filter((p) => deps.registry.enabledChainsOf(p).length > 0);
  const disabled = PROTOCOLS.filter((p) => !enabled.includes(p));
  return (
    `Families with an enabled chain on this deployment: ${enabled.join(', ') || 'none'}. ` +
    `A protocol family with no enabled chain${disabled.length ? ` (here: ${disabled.join(', ')})` : ''} is 400 INVALID_CHAIN "not enabled": nothing is accepted that could never be seen.`
  );
}

export function registerDepositRoutes(api: ApiBuilder, deps: ApiDeps): void {
  const NOT_ENABLED_DOC = notEnabledDoc(deps);
  // Reference detail, list and unbind answers have per-style shapes (api/presenters/deposits.ts).
  const { format } = api;
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
      body: Type.Object(
        { depositReference: referenceSchema, protocol: protocolSchema, metadata: Type.Optional(metadataSchema) },
        { additionalProperties: false },
      ),
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
      body: Type.Object(
        {
          depositReference: Type.Optional(referenceSchema),
          address: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
          protocol: Type.Optional(protocolSchema),
        },
        { additionalProperties: false },
      ),
      response: format.documented(unbindSchemas),
    },
    async ({ caller, body: input, reply }) => {
      let result;
      if (input.depositReference !== undefined && input.address === undefined) {
        result = await unbindDepositReference(deps, caller.organizationId, { depositReference: input.depositReference, protocol: input.protocol });
      } else if (input.address !== undefined && input.protocol !== undefined && input.depositReference === undefined) {
        result = await unbindDepositAddress(deps, caller.organizationId, { address: input.address, protocol: input.protocol });
      } else {
        throw validationError('Send either {depositReference} or {address, protocol}', [{ field: '(body)', message: 'needs depositReference, or address and protocol' }]);
      }
      return reply.raw(200, unbindAnswer(format, result, `Unbound ${result.unboundAddresses} address(es)`));
    },
  );

  // --- References: list and detail (both descriptions, shape per style) ------------------------
  api.route(
    {
      method: 'get',
      path: '/deposits/references',
      summary: 'List deposit references',
      description:
        'Filters: depositReference (exact), protocol, search (substring of the reference, case-insensitive). sortBy createdAt (when first bound; the default) or depositReference; newest first by default (sortOrder). ' +
        'Style A: data.references (one item per bound family: depositReference, protocol, depositAddress, totalDeposits, totalAmount, lastDepositAt, boundAt) with total, page, limit. ' +
        `Style B: data (one item per reference: depositReference, protocols, addressCount, totalDeposits, totalAmount keyed by currency, lastDepositAt) and pagination. ${TOTALS_DOC}`,
      tag: TAG,
      minRole: 'viewer',
      query: pageQuerySchema({
        sortBy: StringEnum(['createdAt', 'depositReference'], { default: 'createdAt' }),
        sortOrder: StringEnum(['asc', 'desc'], { default: 'desc' }),
        depositReference: Type.Optional(referenceSchema),
        protocol: Type.Optional(protocolSchema),
        search: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      }),
      ...format.documented(referenceListDocs),
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listDepositReferences(deps, caller.organizationId, query);
      return reply.raw(200, referenceListAnswer(format, items, { page: query.page, limit: query.limit, total }));
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
      query: Type.Object({ protocol: Type.Optional(protocolSchema) }, { additionalProperties: false }),
      response: format.documented(referenceDetailSchemas),
    },
    async ({ caller, params, query, reply }) => {
      const detail = await getDepositReference(deps, caller.organizationId, params.depositReference, query);
      return reply.raw(200, referenceDetailAnswer(format, detail));
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
      body: Type.Object(
        {
          depositReference: referenceSchema,
          currency: Type.String({ minLength: 1, maxLength: 16 }),
          chainId: chainIdInput,
          metadata: Type.Optional(metadataSchema),
        },
        { additionalProperties: false },
      ),
      response: registrationSchema,
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
      query: Type.Object({ chainId: Type.Optional(chainIdInput) }, { additionalProperties: false }),
      response: format.documented(unbindSchemas),
    },
    async ({ caller, params, query, reply }) => {
      const result = await unbindDepositReference(deps, caller.organizationId, { depositReference: params.depositReference, chainId: query.chainId });
      const message = result.unboundAddresses > 0 ? `Unbound ${result.unboundAddresses} address(es)` : `Removed ${query.chainId}; the address stays bound for the other chains`;
      return reply.raw(200, unbindAnswer(format, result, message));
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
        filters: DEPOSIT_LIST_FILTERS,
      }),
      response: depositSchema,
      listOf: 'deposits',
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listDeposits(deps, caller.organizationId, query);
      return reply.list('deposits', items.map(presentDeposit), { page: query.page, limit: query.limit, total });
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
