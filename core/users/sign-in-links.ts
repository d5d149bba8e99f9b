import { and, eq, gt, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { signInLinks } from '../../db/schema';
import { randomToken, sha256Hex } from '../platform/secrets';

/**
 * One-time sign-in links (the first Owner's, "e-mail me a link", invitations). The link carries
 * a random token; only its SHA-256 is stored, and it works once, before it expires.
 */
export type LinkPurpose = 'sign-in' | 'invitation';

export const LINK_LIFETIME_MS: Record<LinkPurpose, number> = { 'sign-in': 24 * 3600_000, invitation: 7 * 24 * 3600_000 };

export async function issueSignInLink(db: DbOrTx, userId: string, purpose: LinkPurpose, now: Date, lifetimeMs = LINK_LIFETIME_MS[purpose]): Promise<string> {
  const token = randomToken(32);
  await db.insert(signInLinks).values({ tokenHash: sha256Hex(token), userId, purpose, createdAt: now, expiresAt: new Date(now.getTime() + lifetimeMs) });
  return token;
}

/** Whether the token is an unused, unexpired link (the confirmation page asks before it is used). */
export async function peekSignInLink(db: DbOrTx, token: string, now: Date): Promise<{ userId: string; purpose: LinkPurpose } | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return null;
  const [row] = await db
    .select({ userId: signInLinks.userId, purpose: signInLinks.purpose })
    .from(signInLinks)
    .where(and(eq(signInLinks.tokenHash, sha256Hex(token)), isNull(signInLinks.usedAt), gt(signInLinks.expiresAt, now)));
  return row ?? null;
}

/** Uses the link: at most one request ever gets its user (the update is the check). */
export async function consumeSignInLink(db: DbOrTx, token: string, now: Date): Promise<{ userId: string; purpose: LinkPurpose } | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return null;
  const [row] = await db
    .update(signInLinks)
    .set({ usedAt: now })
    .where(and(eq(signInLinks.tokenHash, sha256Hex(token)), isNull(signInLinks.usedAt), gt(signInLinks.expiresAt, now)))
    .returning({ userId: signInLinks.userId, purpose: signInLinks.purpose });
  return row ?? null;
}
