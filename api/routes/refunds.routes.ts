import { Type } from '@sinclair/typebox';
import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { listQuerySchema } from '../validation';
import { StringEnum } from '../../core/platform/wire-schema';
import { REFUND_KINDS, REFUND_STATUSES } from '../../db/schema';
import { roleAtLeast } from '../../core/organizations/roles';
import { apiKeyActor, REASON_MAX_LENGTH } from '../../core/reconciliation/actor';
import {
  approveRefund,
  cancelRefund,
  getRefund,
  issueRefund,
  issueRequestedRefund,
  listRefunds,
  DEFAULT_REFUND_DAYS,
  MAX_REFUND_DAYS,
  REFUND_SORT_FIELDS,
  type RefundSource,
} from '../../core/refunds/refunds';
import { exportApprovedRefundsCsv, REFUND_EXPORT_COLUMNS, safeBatchOfApprovedRefunds, SAFE_BATCH_MAX } from '../../core/refunds/refund-export';
import { issuePayout } from '../../core/refunds/payouts';
import { presentRefund, refundSchema } from '../../core/views/refund';
import type { Caller } from '../../core/organizations/organizations';
import type { EdgeRequest } from '../route-kit';

const TAG = 'Refunds';

const issueBody = Type.Object(
  {
    amount: Type.Optional(
      Type.String({
        maxLength: 100,
        description: 'Decimal string in token units. Default: the excess of an overpaid order, else all it received; never more than it received minus its refunds not cancelled or expired (400 INVALID_AMOUNT)',
      }),
    ),
    currency: Type.Optional(Type.String({ minLength: 1, maxLength: 16, description: 'Default and only value: the payment\'s currency' })),
    chainId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Default and only value: the payment\'s chain' })),
    reason: Type.String({ minLength: 1, maxLength: REASON_MAX_LENGTH, description: 'Why, in your words: kept on the refund and in the audit log' }),
    expiresAt: Type.Optional(
      Type.String({ maxLength: 64, description: `RFC 3339 with an offset, at most ${MAX_REFUND_DAYS} days away; default ${DEFAULT_REFUND_DAYS} days. Not claimed by then: expired` }),
    ),
  },
  { additionalProperties: false },
);

const payoutBody = Type.Object(
  {
    amount: Type.String({ maxLength: 100, description: 'Decimal string in token units: any positive amount of the token (no more decimals than it has). Not capped by anything received, nor by max_order_amount (that bounds orders)' }),
    currency: Type.String({ minLength: 1, maxLength: 16, example: 'USDT' }),
    chainId: Type.String({ minLength: 1, maxLength: 64, example: 'ethereum-sepolia' }),
    reason: Type.String({ minLength: 1, maxLength: REASON_MAX_LENGTH, description: 'What it pays, e.g. "affiliate March": kept on the payout and in the audit log' }),
    expiresAt: Type.Optional(
      Type.String({ maxLength: 64, description: `RFC 3339 with an offset, at most ${MAX_REFUND_DAYS} days away; default ${DEFAULT_REFUND_DAYS} days. Not claimed by then (or approved and unpaid): expired` }),
    ),
    destination: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description:
          'Where to pay it, if you know: checked as a claim is (EVM checksum, Tron base58check, a Solana wallet on the curve; never the zero address, the token contract or a pool address: 400 VALIDATION_ERROR naming the reason), then the payout is claimed, awaiting your approval. Absent: awaiting_claim, and claimUrl is for the recipient to give it',
      }),
    ),
  },
  { additionalProperties: false },
);

const cancelBody = Type.Object({ reason: Type.Optional(Type.String({ maxLength: REASON_MAX_LENGTH })) }, { additionalProperties: false });

const listQuery = listQuerySchema({
  sortBy: REFUND_SORT_FIELDS,
  defaultSortBy: 'createdAt',
  filters: {
    kind: Type.Optional(StringEnum(REFUND_KINDS, { description: 'refund or payout (payouts are listed here: one resource, one presenter)' })),
    status: Type.Optional(StringEnum(REFUND_STATUSES)),
    orderId: Type.Optional(Type.String({ maxLength: 64 })),
    depositReference: Type.Optional(Type.String({ maxLength: 255 })),
    transferId: Type.Optional(Type.String({ maxLength: 64 })),
  },
});

const exportQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(['approved'] as const, { description: 'Only approved refunds are exported: the ones you are about to pay (the default)' })),
    format: Type.Optional(
      StringEnum(['safe', 'csv'] as const, {
        description: `csv (the default): ${REFUND_EXPORT_COLUMNS.join(', ')}; safe: a Safe Transaction Builder JSON batch (one ERC-20 transfer call per refund, at most ${SAFE_BATCH_MAX}) of one EVM chain`,
      }),
    ),
    chainId: Type.Optional(Type.String({ maxLength: 64, description: 'Only this chain (safe: required when approved EVM refunds are on several chains)' })),
  },
  { additionalProperties: false },
);

const ISSUE_DOC =
  'Admin and Owner: the refund is issued (status awaiting_claim) with a claimUrl to send to the payer, who gives a destination there (claimed, refund.claimed). Member: it is requested (status requested, no claimUrl) until an Admin or Owner issues it (POST /refunds/{id}/issue). The amount is in the payment\'s token and chain; the payment\'s row is locked while it is decided, so concurrent refunds never exceed what it received. Audit-logged.';

export function registerRefundRoutes(api: ApiBuilder, deps: ApiDeps): void {
  const actorOf = (caller: Caller, req: EdgeRequest) => apiKeyActor(caller.organizationId, caller.keyId, req.ip ?? null);
  const issue = async (caller: Caller, req: EdgeRequest, source: RefundSource, body: typeof issueBody.static) =>
    presentRefund(deps, await issueRefund(deps, actorOf(caller, req), roleAtLeast(caller.role, 'admin'), source, body));

  const created = { tag: TAG, minRole: 'member' as const, creates: true, successStatus: 201, body: issueBody, response: refundSchema };
  api.route(
    { ...created, method: 'post', path: '/orders/:orderId/refunds', summary: 'Refund an order', description: `Default amount: an overpaid order's excess (amountReceived − amount), else what it received. ${ISSUE_DOC}` },
    async ({ caller, params, body, req, reply }) => reply.created(await issue(caller, req, { orderId: params.orderId }, body), 'Refund created'),
  );
  api.route(
    {
      ...created,
      method: 'post',
      path: '/deposits/references/:depositReference/refunds',
      summary: 'Refund a deposit reference\'s deposits',
      description: `What it received: its confirmed deposits in the refund's token and chain (default: those of its latest deposit). ${ISSUE_DOC}`,
    },
    async ({ caller, params, body, req, reply }) => reply.created(await issue(caller, req, { depositReference: params.depositReference }, body), 'Refund created'),
  );
  api.route(
    {
      ...created,
      method: 'post',
      path: '/transfers/:id/refunds',
      summary: 'Return a payment nobody was credited with',
      description: `For a confirmed transfer left unattributed (or recorded against an order without counting): 409 CONFLICT for a credited one (refund its order or deposit reference) or one not confirmed. ${ISSUE_DOC}`,
    },
    async ({ caller, params, body, req, reply }) => reply.created(await issue(caller, req, { transferId: params.id }, body), 'Refund created'),
  );

  api.route(
    {
      method: 'post',
      path: '/payouts',
      summary: 'Pay out from your own wallet (an affiliate, a seller): no order',
      description:
        'A payout is a refund without an order (kind payout, id po_…): with a destination it is claimed at once; without one it is awaiting_claim and its claimUrl is for the recipient (payout.claimed when given). Then as a refund: approve (POST /refunds/{id}/approve), pay from your wallet (paymentUri, or GET /refunds/export with the approved refunds), Stablegate watches the destination (payout.completed); cancel, expiry. GET /refunds?kind=payout lists them. Admin and Owner. Audit-logged.',
      tag: 'Payouts',
      minRole: 'admin',
      creates: true,
      successStatus: 201,
      body: payoutBody,
      response: refundSchema,
    },
    async ({ caller, body, req, reply }) => reply.created(presentRefund(deps, await issuePayout(deps, actorOf(caller, req), body)), 'Payout created'),
  );

  api.route(
    {
      method: 'get',
      path: '/refunds',
      summary: 'List refunds',
      description: 'Refunds and payouts. Filters: kind (refund or payout), status, orderId, depositReference, transferId. sortBy createdAt (default) or expiresAt; ties by id.',
      tag: TAG,
      minRole: 'viewer',
      query: listQuery,
      listOf: 'refunds',
      response: refundSchema,
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listRefunds(deps.db, caller.organizationId, query);
      return reply.list('refunds', items.map((r) => presentRefund(deps, r)), { page: query.page, limit: query.limit, total });
    },
  );

  // Before /refunds/:id, which would take "export" for an id.
  api.route(
    {
      method: 'get',
      path: '/refunds/export',
      summary: 'Export approved refunds and payouts for your wallet to pay at once',
      description:
        'Approved refunds and payouts (kind). format=safe: a Safe Transaction Builder JSON batch ({version, chainId, createdAt, meta, transactions: [{to: token, value: "0", data: ERC-20 transfer calldata}]}) to load in the Safe app and sign there; format=csv: one row per refund (address, amount, token, chain) for other wallets and families. Nothing is signed or changed here.',
      tag: TAG,
      minRole: 'viewer',
      query: exportQuery,
    },
    async ({ caller, query, reply }) => {
      if ((query.format ?? 'csv') === 'csv') return reply.csv(await exportApprovedRefundsCsv(deps, caller.organizationId, query.chainId));
      return reply.raw(200, await safeBatchOfApprovedRefunds(deps, caller.organizationId, query.chainId));
    },
  );

  api.route(
    { method: 'get', path: '/refunds/:id', summary: 'One refund', tag: TAG, minRole: 'viewer', response: refundSchema },
    async ({ caller, params, reply }) => reply.ok(presentRefund(deps, await getRefund(deps.db, caller.organizationId, params.id))),
  );

  api.route(
    {
      method: 'post',
      path: '/refunds/:id/issue',
      summary: 'Issue a refund a Member requested',
      description: 'requested → awaiting_claim: its claimUrl is valid from now. 409 INVALID_STATUS_TRANSITION otherwise. Admin and Owner.',
      tag: TAG,
      minRole: 'admin',
      response: refundSchema,
    },
    async ({ caller, params, req, reply }) => reply.ok(presentRefund(deps, await issueRequestedRefund(deps, actorOf(caller, req), params.id)), 'Refund issued'),
  );

  api.route(
    {
      method: 'post',
      path: '/refunds/:id/approve',
      summary: 'Approve a claimed refund: you will pay it from your own wallet',
      description:
        'claimed → approved. The answer carries paymentUri: EIP-681 with the chain id (EVM), a tron: URI, or a Solana Pay transfer request, for the exact amount to the destination; many at once: GET /refunds/export. 409 INVALID_STATUS_TRANSITION for a refund not claimed. Admin and Owner.',
      tag: TAG,
      minRole: 'admin',
      response: refundSchema,
    },
    async ({ caller, params, req, reply }) => reply.ok(presentRefund(deps, await approveRefund(deps, actorOf(caller, req), params.id)), 'Refund approved'),
  );

  api.route(
    {
      method: 'post',
      path: '/refunds/:id/cancel',
      summary: 'Cancel a refund that is not completed',
      description: 'Its claim link stops working and its amount is free to refund again. 409 INVALID_STATUS_TRANSITION for a completed, expired or cancelled refund. Admin and Owner.',
      tag: TAG,
      minRole: 'admin',
      body: cancelBody,
      response: refundSchema,
    },
    async ({ caller, params, body, req, reply }) => reply.ok(presentRefund(deps, await cancelRefund(deps, actorOf(caller, req), params.id, body.reason)), 'Refund cancelled'),
  );
}
