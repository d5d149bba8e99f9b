import { formatAmount } from './amounts';
import type { Logger } from './logger';

/**
 * The money path in plain lines: one `info` line per payment seen, confirmed or dropped, order
 * completed or expired, deposit pending or confirmed, and webhook delivered or failed, each with
 * the ids a person searches by (organizationId, orderId / depositId / depositReference,
 * transferId, txHash, eventId, endpointId). Messages are fixed strings, so `grep "payment seen"`
 * finds them all; amounts are decimal strings in base units (`amountUnits`) with the currency.
 */
export type MoneyLine =
  | 'payment seen'
  | 'payment confirmed'
  | 'payment dropped'
  | 'order completed'
  | 'order expired'
  | 'deposit pending'
  | 'deposit confirmed'
  | 'payment attributed by hand'
  | 'order settled by hand'
  | 'refund payment seen'
  | 'refund completed'
  | 'payout completed'
  | 'webhook delivered'
  | 'webhook failed, will retry'
  | 'webhook failed, no more attempts'
  | 'webhook failed, endpoint disabled';

export function logMoney(logger: Logger | undefined, line: MoneyLine, fields: Record<string, unknown>): void {
  if (!logger?.isLevelEnabled('info')) return;
  const clean: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== null) clean[k] = typeof v === 'bigint' ? v.toString() : v;
  logger.info({ money: true, ...clean }, line);
}

/** Who knows a token's decimals: the chain registry (core/chains/registry.ts), the one authority. */
export interface TokenDecimals {
  tokenDecimals(chainId: string | null, currency: string): number;
}

/**
 * A transfer's amount in token units ("12.5"), decimals from the registry's one authority; an
 * unknown token throws there, as it does for the wire amount of the same transfer.
 */
export function tokenAmount(registry: TokenDecimals, chainId: string | null, currency: string, units: bigint | string): string {
  return formatAmount(BigInt(units), registry.tokenDecimals(chainId, currency));
}
