import { sql, type AnyColumn, type Placeholder, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { getConfigValue, integerConfigSql } from '../organizations/org-config';
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

const CONFIG_KEY = { order: 'confirmations.orders', deposit: 'confirmations.deposits' } as const;
/** The chain's own requirement for the kind (already raised by the deployment's settings). */
export const chainConfirmations = (chain: Chain, kind: 'order' | 'deposit') => (kind === 'order' ? chain.orderConfirmations : chain.depositConfirmations);

export async function requiredConfirmationsFor(db: DbOrTx, organizationId: string, chain: Chain, kind: 'order' | 'deposit'): Promise<number> {
  const value = await getConfigValue<number | null>(db, organizationId, CONFIG_KEY[kind]);
  return effectiveConfirmations(chainConfirmations(chain, kind), value);
}

/**
 * effectiveConfirmations as an SQL expression, for a statement that stores it without a read
 * first; `chainValue` is chainConfirmations(chain, kind), given or a placeholder.
 */
export function requiredConfirmationsSql(organizationId: string | Placeholder, chainValue: number | Placeholder | SQL, kind: 'order' | 'deposit'): SQL {
  return sql`greatest(${chainValue}::int, coalesce(${integerConfigSql(organizationId, CONFIG_KEY[kind])}, 0))`;
}

/**
 * A recorded transfer's required confirmations: what was stored when it was recorded (its order's,
 * its deposit's, or the chain's order confirmations when unattributed). An unattributed row
 * recorded before migration 0010 stored none: the chain's order confirmations. Read by the
 * confirmations job (SQL) and the transfer's presenter alike.
 */
export function transferRequiredConfirmations(chain: Pick<Chain, 'orderConfirmations'>, stored: number | null): number {
  return stored ?? chain.orderConfirmations;
}

/** transferRequiredConfirmations as an SQL expression over the stored column. */
export function transferRequiredConfirmationsSql(chain: Pick<Chain, 'orderConfirmations'>, stored: SQL | AnyColumn): SQL {
  return sql`coalesce(${stored}, ${chain.orderConfirmations})`;
}
