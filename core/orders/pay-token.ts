import { randomFillSync } from 'node:crypto';

/** Random bytes of a payment page token: 128 bits (design.md §6a: at least 128, unguessable). */
const TOKEN_BYTES = 16;

/**
 * Random bytes for the next 256 tokens, from the operating system's CSPRNG in one call; each
 * token takes its own 16 bytes once and they are never handed out again.
 */
const upcoming = Buffer.alloc(TOKEN_BYTES * 256);
let next = upcoming.length;

/**
 * A new payment page URL token: 128 random bits, base64url without padding (22 characters).
 * Made here and bound into the order-creation statement: the same token made by Postgres
 * (pgcrypto's gen_random_bytes and the base64url conversion in SQL) cost about a tenth of that
 * statement's CPU time. Migration 0003 gave orders that existed before it theirs in SQL.
 */
export function newPayToken(): string {
  if (next === upcoming.length) {
    randomFillSync(upcoming);
    next = 0;
  }
  const token = upcoming.toString('base64url', next, next + TOKEN_BYTES);
  next += TOKEN_BYTES;
  return token;
}

/** What a token looks like; anything else is not looked up at all. */
export const PAY_TOKEN_PATTERN = /^[A-Za-z0-9_-]{22}$/;
