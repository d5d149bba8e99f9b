import { monotonicFactory } from 'ulid';

/** Identifier prefixes (design.md §4a). */
export type IdPrefix = 'org' | 'key' | 'ord' | 'dep' | 'trf' | 'evt' | 'whe' | 'whd' | 'pl' | 'dr' | 'req';

const nextUlid = monotonicFactory();

/** A type prefix and a random, time-sortable part, e.g. `ord_01jd3k...`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid().toLowerCase()}`;
}
