import { AppError } from './errors';

/**
 * Amounts are decimal strings on the wire and integer base units (bigint) everywhere else.
 * Never a JS number: 18-decimal tokens do not fit in a double.
 */
const AMOUNT_PATTERN = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
/** Sane upper bound for one amount: one trillion token units. */
const MAX_WHOLE_UNITS = 10n ** 12n;

export function parseAmount(text: unknown, decimals: number, field = 'amount'): bigint {
  if (typeof text !== 'string' || !AMOUNT_PATTERN.test(text)) {
    throw new AppError('INVALID_AMOUNT', `${field} must be a positive decimal string such as "10.50"`);
  }
  const [whole, fraction = ''] = text.split('.');
  if (fraction.length > decimals) {
    throw new AppError('INVALID_AMOUNT', `${field} has more than ${decimals} decimal places`);
  }
  const units = BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
  if (units <= 0n) throw new AppError('INVALID_AMOUNT', `${field} must be greater than zero`);
  if (units >= MAX_WHOLE_UNITS * 10n ** BigInt(decimals)) {
    throw new AppError('INVALID_AMOUNT', `${field} is above the maximum of ${MAX_WHOLE_UNITS} units`);
  }
  return units;
}

/** Shortest decimal form: 10500000n with 6 decimals is "10.5". */
export function formatAmount(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const base = 10n ** BigInt(decimals);
  const whole = abs / base;
  const fraction = (abs % base).toString().padStart(decimals, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}
