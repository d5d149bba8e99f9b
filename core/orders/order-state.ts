import type { Tx } from '../../db/client';
import type { ServiceContext } from '../context';

/**
 * STAND-IN until the orders branch lands (it owns this file; take theirs on merge).
 * Signatures are the agreed contract; no order status logic lives here.
 */
export async function recomputeOrder(_tx: Tx, _ctx: ServiceContext, _orderId: string): Promise<'pending' | 'completed' | 'expired'> {
  throw new Error('recomputeOrder is provided by the orders branch (not merged yet)');
}

export function transferCountsTowardOrder(
  order: { chainId: string; currency: string; createdAt: Date; graceEndsAt: Date },
  transfer: { chainId: string; currency: string; blockTimestamp: Date },
): boolean {
  void order;
  void transfer;
  throw new Error('transferCountsTowardOrder is provided by the orders branch (not merged yet)');
}
