import { formatAmount } from '../platform/amounts';
import type { ChainRegistry } from '../chains/registry';

/**
 * Sums of token amounts kept exact: integer base units (bigint) with their decimals, never a float.
 * Amounts of different decimals (USDT 6, DAI 18, or one currency with other decimals on another
 * chain) are added after scaling to the larger number of decimals.
 */
export interface ScaledAmount {
  units: bigint;
  decimals: number;
}

export const ZERO: ScaledAmount = { units: 0n, decimals: 0 };

export function addScaled(a: ScaledAmount, b: ScaledAmount): ScaledAmount {
  const decimals = Math.max(a.decimals, b.decimals);
  const scale = (x: ScaledAmount) => x.units * 10n ** BigInt(decimals - x.decimals);
  return { units: scale(a) + scale(b), decimals };
}

export function formatScaled(x: ScaledAmount): string {
  return formatAmount(x.units, x.decimals);
}

/** Decimals of a token (the registry's one authority). */
export function tokenDecimals(registry: ChainRegistry, chainId: string, currency: string): number {
  return registry.tokenDecimals(chainId, currency);
}

/** One group of deposits as summed by the database: per chain and currency, in base units. */
export interface DepositSumRow {
  chainId: string;
  currency: string;
  count: number;
  units: bigint;
  lastDepositAt: Date | null;
}

export interface DepositTotals {
  /** Number of credited deposits (confirmed or completed). */
  count: number;
  /** Decimal string per currency code, e.g. { USDT: "10.5", DAI: "0.000000000000000001" }. */
  byCurrency: Record<string, string>;
  /**
   * Face-value sum over all currencies (all are USD stablecoins, added 1:1 at their nominal value,
   * exactly, at the largest number of decimals involved). Equals byCurrency's only value when there
   * is one currency; "0" when there is none.
   */
  nominal: string;
  lastDepositAt: Date | null;
}

export function totalsOf(registry: ChainRegistry, rows: DepositSumRow[]): DepositTotals {
  const perCurrency = new Map<string, ScaledAmount>();
  let all = ZERO;
  let count = 0;
  let lastDepositAt: Date | null = null;
  for (const row of rows) {
    const amount = { units: row.units, decimals: tokenDecimals(registry, row.chainId, row.currency) };
    perCurrency.set(row.currency, addScaled(perCurrency.get(row.currency) ?? ZERO, amount));
    all = addScaled(all, amount);
    count += row.count;
    if (row.lastDepositAt && (!lastDepositAt || row.lastDepositAt > lastDepositAt)) lastDepositAt = row.lastDepositAt;
  }
  const byCurrency: Record<string, string> = {};
  for (const currency of [...perCurrency.keys()].sort()) byCurrency[currency] = formatScaled(perCurrency.get(currency)!);
  return { count, byCurrency, nominal: formatScaled(all), lastDepositAt };
}
