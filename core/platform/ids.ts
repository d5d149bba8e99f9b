import { randomBytes } from 'node:crypto';
import { decodeTime, encodeTime, monotonicFactory } from 'ulid';

/** Identifier prefixes (design.md §4a). */
export type IdPrefix = 'org' | 'key' | 'usr' | 'aud' | 'ord' | 'dep' | 'trf' | 'evt' | 'whe' | 'whd' | 'pl' | 'dr' | 'req' | 'rf' | 'po';

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

const MAX_ULID_TIME = 2 ** 48 - 1;

/**
 * The smallest id of `prefix` made at or after `at` (`<prefix>_<time><0…>`): ids are time-ordered
 * ULIDs, so a time is an id range (history retention and partitions, the id-range helpers below).
 */
export function idAt(prefix: IdPrefix, at: Date | number): string {
  const ms = typeof at === 'number' ? at : at.getTime();
  return `${prefix}_${encodeTime(Math.min(Math.max(0, ms), MAX_ULID_TIME), 10).toLowerCase()}0000000000000000`;
}
const ULID_ID = /^[a-z]+_[0-9a-hjkmnp-tv-z]{26}$/;

/** Whether a text has the shape of an id newId made with this prefix. */
export function isIdOf(prefix: IdPrefix, text: string): boolean {
  return text.startsWith(`${prefix}_`) && ULID_ID.test(text);
}

/** The time part of an id made by newId (ms), null for anything else. */
function timeOf(id: string): number | null {
  return ULID_ID.test(id) ? decodeTime(id.slice(id.indexOf('_') + 1).toUpperCase()) : null;
}

/** How far behind another machine's clock a row's id may be (its ULID time): generous. */
const CLOCK_SKEW_MS = 86_400_000;

/**
 * A lower bound of the ids of `prefix` rows made after the row `other` (a delivery after its
 * event): its time less a day of clock skew. A lookup of an event's deliveries by event_id adds it,
 * so the history partitions older than the event are pruned (db/migrations/0014).
 */
export function idFloorAfter(prefix: IdPrefix, other: string): string {
  return idAt(prefix, (timeOf(other) ?? 0) - CLOCK_SKEW_MS);
}

/**
 * The id ranges a batch of webhook deliveries (by id) and their events and attempts lie in:
 * hand-written statements that join on ids from an array add them, so the planner keeps only the
 * history partitions of those months (db/migrations/0014). A delivery's event was made at the
 * delivery's time (its id carries it), or, for rows from before partitioning, before it (within a
 * day of clock skew after it): the claim widens the lower bound for those (core/webhooks/claim.ts).
 */
export function deliveryIdRange(deliveryIds: string[]): { from: string; to: string; eventFrom: string; eventTo: string } {
  const sorted = [...deliveryIds].sort();
  const [from, to] = [sorted[0], sorted[sorted.length - 1]];
  const [fromMs, toMs] = [timeOf(from), timeOf(to)];
  // Not ids this service made (a job naming a bogus delivery): no bound, the claim says "no such delivery".
  if (fromMs === null || toMs === null) return { from: '', to: '\u{10ffff}', eventFrom: '', eventTo: '\u{10ffff}' };
  return { from, to, eventFrom: idAt('evt', fromMs - CLOCK_SKEW_MS), eventTo: idAt('evt', toMs + CLOCK_SKEW_MS) };
}

/** The smallest id of `prefix` made after the millisecond of `other`. */
export function idAfter(prefix: IdPrefix, other: string): string {
  return idAt(prefix, (timeOf(other) ?? MAX_ULID_TIME - 1) + 1);
}
