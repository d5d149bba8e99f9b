import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulid';

/** Identifier prefixes (design.md §4a). */
export type IdPrefix = 'org' | 'key' | 'usr' | 'aud' | 'ord' | 'dep' | 'trf' | 'evt' | 'whe' | 'whd' | 'pl' | 'dr' | 'req';

/**
 * ulid asks its PRNG once per character and its default makes a crypto call each time (16 per
 * id, two ids per API request); one call here serves 256 characters, still crypto-random.
 */
function bufferedCryptoPrng(): () => number {
  let bytes = randomBytes(256);
  let next = 0;
  return () => {
    if (next === bytes.length) {
      bytes = randomBytes(256);
      next = 0;
    }
    return bytes[next++] / 256;
  };
}

const nextUlid = monotonicFactory(bufferedCryptoPrng());

/** A type prefix and a random, time-sortable part, e.g. `ord_01jd3k...`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid().toLowerCase()}`;
}
