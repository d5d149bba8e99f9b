import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { listQuerySchema } from '../validation';
import { getTransfer, listTransfers, TRANSFER_SORT_FIELDS, TRANSFER_STATUSES, type ListTransfersQuery } from '../../core/transfers/transfers';

const transferSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', example: 'trf_01jd…' },
    transferId: { type: 'string', description: 'Same as id' },
    chainId: { type: 'string' },
    protocol: { type: 'string', enum: ['evm', 'tron', 'solana'] },
    currency: { type: 'string' },
    tokenAddress: { type: 'string' },
    amount: { type: 'string', description: 'Decimal string in token units' },
    from: { type: 'string' },
    to: { type: 'string', description: 'The pool address that received it' },
    txHash: { type: 'string' },
    logIndex: { type: 'integer', description: "The log's position in its block" },
    blockNumber: { type: 'integer' },
    blockHash: { type: 'string' },
    blockTimestamp: { type: 'string', format: 'date-time', description: 'Chain time of the block' },
    confirmations: { type: 'integer' },
    requiredConfirmations: { type: ['integer', 'null'] },
    status: {
      type: 'string',
      enum: [...TRANSFER_STATUSES],
      description: 'dropped: its block was orphaned by a reorganisation before confirmation; never credited. reorged: confirmed, then its block was orphaned deeper than the required confirmations; the credit stays',
    },
    attribution: { type: ['string', 'null'], enum: ['order', 'deposit', null], description: 'null: the address was held by nobody at the block time (recorded, never credited)' },
    orderId: { type: ['string', 'null'] },
    orderReference: { type: ['string', 'null'] },
    depositReference: { type: ['string', 'null'] },
    depositId: { type: ['string', 'null'] },
    counted: { type: 'boolean', description: "Counts toward its order: same chain and token, block time within the order's window and grace" },
    credited: { type: 'boolean', description: 'Confirmed and credited to its order or deposit' },
    detectedAt: { type: 'string', format: 'date-time' },
    confirmedAt: { type: ['string', 'null'], format: 'date-time' },
    droppedAt: { type: ['string', 'null'], format: 'date-time' },
  },
};

const listQuery = listQuerySchema({
  sortBy: [...TRANSFER_SORT_FIELDS],
  defaultSortBy: 'detectedAt',
  filters: {
    status: { type: 'string', enum: [...TRANSFER_STATUSES] },
    currency: { type: 'string', maxLength: 16 },
    chainId: { type: 'string', maxLength: 64 },
    txHash: { type: 'string', maxLength: 128 },
    address: { type: 'string', maxLength: 128, description: 'Receiving pool address' },
    orderId: { type: 'string', maxLength: 64 },
    depositReference: { type: 'string', maxLength: 255 },
  },
});

export function registerTransferRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route<unknown, ListTransfersQuery>(
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
      const { items, total } = await listTransfers(deps.db, deps.registry, caller.organizationId, query);
      return reply.list('transfers', items, { page: query.page, limit: query.limit, total });
    },
  );

  api.route(
    { method: 'get', path: '/transfers/:id', summary: 'One transfer', tag: 'Transfers', minRole: 'viewer', response: transferSchema },
    async ({ caller, params, reply }) => reply.ok(await getTransfer(deps.db, deps.registry, caller.organizationId, params.id)),
  );
}
