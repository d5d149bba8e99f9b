import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { listQuerySchema } from '../validation';
import { SEARCH_MAX_LENGTH } from '../../core/chains/search-term';
import { Type } from '@sinclair/typebox';
import { getTransfer, listTransfers, TRANSFER_SORT_FIELDS, TRANSFER_STATUSES, UNATTRIBUTED_REASONS } from '../../core/transfers/transfers';
import { StringEnum } from '../../core/platform/wire-schema';
import { presentTransfer, transferSchema } from '../../core/views/transfer';
import { attributeTransfer, attributionTargetOf } from '../../core/reconciliation/attribute-transfer';
import { apiKeyActor, REASON_MAX_LENGTH } from '../../core/reconciliation/actor';

/** GET /transfers' filters, which its CSV export (exports.routes.ts) takes too. */
export const TRANSFER_LIST_FILTERS = {
    status: Type.Optional(StringEnum(TRANSFER_STATUSES)),
    currency: Type.Optional(Type.String({ maxLength: 16 })),
    chainId: Type.Optional(Type.String({ maxLength: 64 })),
    txHash: Type.Optional(Type.String({ maxLength: 128 })),
    address: Type.Optional(Type.String({ maxLength: 128, description: 'Receiving pool address' })),
    orderId: Type.Optional(Type.String({ maxLength: 64 })),
    depositReference: Type.Optional(Type.String({ maxLength: 255 })),
    attributed: Type.Optional(Type.Boolean({ description: 'true: attributed to an order or a deposit reference; false: attributed to nobody (recorded, never credited; see unattributedReason and candidates)' })),
    unattributedReason: Type.Optional(StringEnum(UNATTRIBUTED_REASONS, { description: 'Only transfers left unattributed for this reason (no_holder, undecidable or paid_late)' })),
    search: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: SEARCH_MAX_LENGTH,
        description:
          'One box for the order id a transfer was credited to (ord_…), its transaction hash (EVM or Tron hex, Solana signature), its receiving address (EVM, Tron or Solana), or else part of its order\'s orderReference or its depositReference (case-insensitive). An address-shaped text that is not a valid address (EVM checksum, Tron base58check) is 400 VALIDATION_ERROR.',
      }),
    ),
};

const listQuery = listQuerySchema({ sortBy: TRANSFER_SORT_FIELDS, defaultSortBy: 'detectedAt', filters: TRANSFER_LIST_FILTERS });

const attributeBody = Type.Object(
  {
    orderId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'An order of the same chain and token (give this or depositReference)' })),
    depositReference: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'A deposit reference with an address of the same family (give this or orderId)' }),
    ),
    reason: Type.String({ minLength: 1, maxLength: REASON_MAX_LENGTH, description: 'Why, in your words: kept on the transfer, the order and the audit log' }),
  },
  { additionalProperties: false },
);

export function registerTransferRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
    {
      method: 'get',
      path: '/transfers',
      summary: 'Token transfers seen into your pool addresses',
      description:
        'Every transfer the chain scanners recorded into one of your pool addresses: attributed to an order or a deposit reference, or unattributed (to an address nobody held at the block time: kept and visible, never credited). Sorted by detectedAt (default), blockNumber, blockTimestamp or confirmedAt; ties by id.',
      tag: 'Transfers',
      minRole: 'viewer',
      query: listQuery,
      response: transferSchema,
      listOf: 'transfers',
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listTransfers(deps, caller.organizationId, query);
      return reply.list('transfers', items.map((t) => presentTransfer(deps.registry, t)), { page: query.page, limit: query.limit, total });
    },
  );

  api.route(
    { method: 'get', path: '/transfers/:id', summary: 'One transfer', tag: 'Transfers', minRole: 'viewer', response: transferSchema },
    async ({ caller, params, reply }) => reply.ok(presentTransfer(deps.registry, await getTransfer(deps.db, caller.organizationId, params.id))),
  );

  api.route(
    {
      method: 'post',
      path: '/transfers/:id/attribute',
      summary: 'Attribute an unattributed payment to an order or a deposit reference, by hand',
      description:
        'For a transfer the detection left unattributed (no_holder, undecidable, paid_late) or recorded against an order without counting (paid after its grace). To an order: same chain and token (400 VALIDATION_ERROR otherwise); it counts toward the order, which is recomputed: an expired order it brings to its amount completes with resolution "manual" (order.completed). To a deposit reference: one with an address of the same family (404 DEPOSIT_REFERENCE_NOT_FOUND otherwise); the deposit is recorded (deposit.pending, then deposit.confirmed). 409 CONFLICT for a transfer already attributed (by the detection or by hand) or dropped. The evidence (minedAfter, minedBy, candidates) stays; attributedBy, attributedAt and attributionReason say who, when and why; the audit log records it. Admin and Owner.',
      tag: 'Transfers',
      minRole: 'admin',
      creates: true,
      body: attributeBody,
      response: transferSchema,
    },
    async ({ caller, params, body, req, reply }) => {
      const target = attributionTargetOf(body);
      const record = await attributeTransfer(deps, apiKeyActor(caller.organizationId, caller.keyId, req.ip ?? null), params.id, target, body.reason);
      return reply.ok(presentTransfer(deps.registry, record), 'Transfer attributed');
    },
  );
}
