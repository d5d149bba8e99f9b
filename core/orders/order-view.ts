import type { ServiceContext } from '../context';
import { formatAmount } from '../amounts';
import type { orders } from '../../db/schema';

/** An order as stored. */
export type OrderRow = typeof orders.$inferSelect;

/** Decimals of an order's token (the registry's one authority). */
export function orderDecimals(ctx: Pick<ServiceContext, 'registry'>, order: Pick<OrderRow, 'chainId' | 'currency'>): number {
  return ctx.registry.tokenDecimals(order.chainId, order.currency);
}

/** The order's wire object (the union of descriptions A and B, design.md §2). */
export interface OrderView {
  orderId: string;
  orderReference: string;
  amount: string;
  /** Sum of the counted, non-dropped transfers (pending or confirmed). */
  amountReceived: string;
  currency: string;
  chainId: string;
  protocol: string;
  address: string;
  paymentUrl: string;
  status: 'pending' | 'completed' | 'expired';
  metadata: Record<string, unknown>;
  successUrl: string | null;
  cancelUrl: string | null;
  requiredConfirmations: number;
  expiresAt: string;
  graceEndsAt: string;
  createdAt: string;
  txHash?: string;
  blockNumber?: number;
  confirmations?: number;
  completedAt?: string;
  expiredAt?: string;
}

/**
 * The one presenter of an order: every route and every order event's data are built from it.
 * Completion fields appear only on completed orders, expiredAt only on expired ones.
 */
export function presentOrder(ctx: Pick<ServiceContext, 'registry' | 'config'>, order: OrderRow): OrderView {
  const decimals = orderDecimals(ctx, order);
  const view: OrderView = {
    orderId: order.id,
    orderReference: order.orderReference,
    amount: formatAmount(order.amount, decimals),
    amountReceived: formatAmount(order.amountReceived, decimals),
    currency: order.currency,
    chainId: order.chainId,
    protocol: order.protocol,
    address: order.address,
    paymentUrl: `${ctx.config.publicBaseUrl}/pay/${order.id}`,
    status: order.status,
    metadata: (order.metadata ?? {}) as Record<string, unknown>,
    successUrl: order.successUrl,
    cancelUrl: order.cancelUrl,
    requiredConfirmations: order.requiredConfirmations,
    expiresAt: order.expiresAt.toISOString(),
    graceEndsAt: order.graceEndsAt.toISOString(),
    createdAt: order.createdAt.toISOString(),
  };
  if (order.status === 'completed') {
    if (order.txHash) view.txHash = order.txHash;
    if (order.blockNumber !== null) view.blockNumber = order.blockNumber;
    if (order.confirmations !== null) view.confirmations = order.confirmations;
    if (order.completedAt) view.completedAt = order.completedAt.toISOString();
  }
  if (order.status === 'expired' && order.expiredAt) view.expiredAt = order.expiredAt.toISOString();
  return view;
}

/** JSON schema of the order object (OpenAPI documentation). */
export const orderJsonSchema = {
  type: 'object',
  properties: {
    orderId: { type: 'string', example: 'ord_01jd3k…' },
    orderReference: { type: 'string', maxLength: 255 },
    amount: { type: 'string', description: 'Decimal string in token units', example: '10.5' },
    amountReceived: {
      type: 'string',
      description:
        'Sum of the transfers counted toward this order that are not dropped (pending and confirmed): right chain, right token, block time between creation and graceEndsAt. Overpayment shows as the excess over amount.',
    },
    currency: { type: 'string', enum: ['USDT', 'USDC', 'DAI'] },
    chainId: { type: 'string', example: 'ethereum-sepolia' },
    protocol: { type: 'string', enum: ['evm', 'tron', 'solana'] },
    address: { type: 'string', description: 'Payment address allocated from the pool' },
    paymentUrl: { type: 'string', description: 'Hosted payment page: <PUBLIC_BASE_URL>/pay/<orderId>' },
    status: { type: 'string', enum: ['pending', 'completed', 'expired'] },
    metadata: { type: 'object' },
    successUrl: { type: ['string', 'null'] },
    cancelUrl: { type: ['string', 'null'] },
    requiredConfirmations: { type: 'integer', description: 'Confirmations a payment needs before it completes the order' },
    expiresAt: { type: 'string', format: 'date-time', description: 'End of the payment window' },
    graceEndsAt: {
      type: 'string',
      format: 'date-time',
      description:
        'expiresAt + grace: payments mined up to this time still count. The order expires only after this time has passed, the chain has been scanned past it, and no counted payment awaits confirmations.',
    },
    createdAt: { type: 'string', format: 'date-time' },
    txHash: { type: 'string', description: 'Completed orders: the transaction whose confirmation completed the order' },
    blockNumber: { type: 'integer', description: 'Completed orders' },
    confirmations: { type: 'integer', description: 'Completed orders: confirmations of that transaction at completion' },
    completedAt: { type: 'string', format: 'date-time', description: 'Completed orders' },
    expiredAt: { type: 'string', format: 'date-time', description: 'Expired orders' },
  },
} as const;
