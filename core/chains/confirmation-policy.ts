import type { DbOrTx } from '../../db/client';
import { getConfigValue } from '../org-config';
import type { Chain } from './registry';

/**
 * Required confirmations of a payment (design.md §4; BTCPay's "small pure function of the policy"):
 * the chain's value for the kind (already raised by CONFIRMATIONS_<CHAIN> /
 * DEPOSIT_CONFIRMATIONS_<CHAIN>), raised further by the organization's `confirmations.orders` /
 * `confirmations.deposits`, never lowered.
 */
export function effectiveConfirmations(chainValue: number, organizationValue: number | null | undefined): number {
  return Math.max(chainValue, organizationValue ?? 0);
}

export async function requiredConfirmationsFor(db: DbOrTx, organizationId: string, chain: Chain, kind: 'order' | 'deposit'): Promise<number> {
  const key = kind === 'order' ? 'confirmations.orders' : 'confirmations.deposits';
  const value = await getConfigValue<number | null>(db, organizationId, key);
  return effectiveConfirmations(kind === 'order' ? chain.orderConfirmations : chain.depositConfirmations, value);
}
