import { sql } from 'drizzle-orm';

/**
 * The payment page's URL token, made by Postgres inside the order-creation statement (no extra
 * round trip): 128 random bits from pgcrypto, base64url without padding (22 characters).
 * Migration 0003 gave existing orders theirs with the same expression.
 */
export const newPayTokenSql = sql.raw(`rtrim(translate(encode(gen_random_bytes(16), 'base64'), '+/', '-_'), '=')`);

/** What a token looks like; anything else is not looked up at all. */
export const PAY_TOKEN_PATTERN = /^[A-Za-z0-9_-]{22}$/;
