import { randomToken128 } from '../platform/secrets';

/**
 * A new payment page URL token: 128 random bits (design.md §6a: at least 128, unguessable),
 * base64url without padding (22 characters). Made here and bound into the order-creation
 * statement: the same token made by Postgres (pgcrypto's gen_random_bytes and the base64url
 * conversion in SQL) cost about a tenth of that statement's CPU time. Migration 0003 gave orders
 * that existed before it theirs in SQL.
 */
export function newPayToken(): string {
  return randomToken128();
}

/** What a token looks like; anything else is not looked up at all. */
export const PAY_TOKEN_PATTERN = /^[A-Za-z0-9_-]{22}$/;
/** The same without its anchors, for patterns that hold a token (the status endpoint's URL). */
export const PAY_TOKEN_SOURCE = PAY_TOKEN_PATTERN.source.slice(1, -1);
