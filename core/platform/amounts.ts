import { AppError } from './errors';

/**
 * Amounts are decimal strings on the wire and integer base units (bigint) everywhere else.
 * Never a JS number: 18-decimal tokens do not fit in a double.
 */
const AMOUNT_PATTERN = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
/** Sane upper bound for one amount: one trillion token units. */
const MAX_WHOLE_UNITS = 10n ** 12n;

export function parseAmount(text: unknown, decimals: number, field = 'amount'): bigint {
  // Like every validation error: a sentence, and details naming the field (INVALID_AMOUNT's own code).
  const invalid = (problem: string) => new AppError('INVALID_AMOUNT', `${field} ${problem}`, [{ field, message: problem }]);
  if (typeof text !== 'string' || !AMOUNT_PATTERN.test(text)) {
    throw invalid(`must be a positive decimal string in token units, such as "10.50" (not base units${typeof text === 'number' ? ', and a string, not a JSON number' : ''})`);
  }
  const [whole, fraction = ''] = text.split('.');
  if (fraction.length > decimals) {
    throw invalid(`has more than ${decimals} decimal places (the token's decimals; amounts are in token units)`);
  }
  const units = BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
  if (units <= 0n) throw invalid('must be greater than zero (in token units)');
  if (units >= MAX_WHOLE_UNITS * 10n ** BigInt(decimals)) {
    throw invalid(`is above the maximum of ${MAX_WHOLE_UNITS} token units`);
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
