import { randomBytes } from 'node:crypto';
import { decodeTime, encodeTime, monotonicFactory } from 'ulid';

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

/**
 * A new id whose time part is another id's: a webhook delivery's id carries its event's time, so
 * the delivery lands in its event's history partition (db/migrations/0014) and leaves with it.
 */
export function newIdInTimeOf(prefix: IdPrefix, other: string): string {
  const time = other.slice(other.indexOf('_') + 1, other.indexOf('_') + 11);
  return `${prefix}_${time}${nextUlid().toLowerCase().slice(10)}`;
}

/** How far behind another machine's clock a row's id may be (its ULID time): generous. */
const CLOCK_SKEW_MS = 86_400_000;

/**
 * A lower bound of the ids of `prefix` rows made after the row `other` (a delivery after its
 * event): its time less a day of clock skew. A lookup of an event's deliveries by event_id adds it,
 * so the history partitions older than the event are pruned (db/migrations/0014).
 */
export function idFloorAfter(prefix: IdPrefix, other: string): string {
  const at = Math.max(0, decodeTime(other.slice(other.indexOf('_') + 1).toUpperCase()) - CLOCK_SKEW_MS);
  return `${prefix}_${encodeTime(at, 10).toLowerCase()}0000000000000000`;
}
