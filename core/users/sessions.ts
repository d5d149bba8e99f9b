import { and, eq, gt, lt, ne, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { memberships, users, userSessions } from '../../db/schema';
import type { Role } from '../organizations/roles';
import { randomToken, sha256Hex } from '../platform/secrets';

/**
 * Dashboard sessions, kept server-side in Postgres. The cookie holds a random token; the table
 * holds its SHA-256 (a copy of the table signs nobody in). A session has an absolute end and an
 * idle end (last_seen_at + idle), and is valid only while its user is still a member of the
 * organization it acts in: a removed member's next request is signed out.
 */
export interface SessionTimeouts {
  idleMs: number;
  absoluteMs: number;
}

export interface Session {
  idHash: string;
  userId: string;
  email: string;
  organizationId: string;
  role: Role;
  csrfToken: string;
  createdAt: Date;
  passwordChangedAt: Date | null;
}

/** How often at most last_seen_at is written (a page view a second should not be a write a second). */
const TOUCH_EVERY_MS = 30_000;

export async function createSession(
  db: DbOrTx,
  input: { userId: string; organizationId: string; ip: string | null; now: Date; timeouts: SessionTimeouts },
): Promise<{ token: string; csrfToken: string }> {
  const token = randomToken(32);
  const csrfToken = randomToken(32);
  await db.insert(userSessions).values({
    idHash: sha256Hex(token),
    userId: input.userId,
    organizationId: input.organizationId,
    csrfToken,
    ip: input.ip,
    createdAt: input.now,
    lastSeenAt: input.now,
    expiresAt: new Date(input.now.getTime() + input.timeouts.absoluteMs),
  });
  return { token, csrfToken };
}

/** The live session of a cookie's token, or null (unknown, expired, idle too long, no longer a member). */
export async function loadSession(db: DbOrTx, token: string, now: Date, timeouts: SessionTimeouts): Promise<Session | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return null;
  const idHash = sha256Hex(token);
  const [row] = await db
    .select({
      idHash: userSessions.idHash,
      userId: userSessions.userId,
      email: users.email,
      organizationId: userSessions.organizationId,
      role: memberships.role,
      csrfToken: userSessions.csrfToken,
      createdAt: userSessions.createdAt,
      lastSeenAt: userSessions.lastSeenAt,
      expiresAt: userSessions.expiresAt,
      passwordChangedAt: users.passwordChangedAt,
    })
    .from(userSessions)
    .innerJoin(users, eq(users.id, userSessions.userId))
    .innerJoin(memberships, and(eq(memberships.userId, userSessions.userId), eq(memberships.organizationId, userSessions.organizationId)))
    .where(eq(userSessions.idHash, idHash));
  if (!row) return null;
  if (row.expiresAt <= now || row.lastSeenAt.getTime() + timeouts.idleMs <= now.getTime()) {
    await db.delete(userSessions).where(eq(userSessions.idHash, idHash));
    return null;
  }
  if (now.getTime() - row.lastSeenAt.getTime() > TOUCH_EVERY_MS) {
    await db.update(userSessions).set({ lastSeenAt: now }).where(eq(userSessions.idHash, idHash));
  }
  const { lastSeenAt: _l, expiresAt: _e, ...session } = row;
  return session;
}

export async function endSession(db: DbOrTx, idHash: string): Promise<void> {
  await db.delete(userSessions).where(eq(userSessions.idHash, idHash));
}

/** Ends every session of the user, but the one kept (the caller's own, after a password change); the count ended. */
export async function endUserSessions(db: DbOrTx, userId: string, keepIdHash?: string): Promise<number> {
  const where = keepIdHash ? and(eq(userSessions.userId, userId), ne(userSessions.idHash, keepIdHash)) : eq(userSessions.userId, userId);
  const ended = await db.delete(userSessions).where(where).returning({ idHash: userSessions.idHash });
  return ended.length;
}

/** Moves the session to another organization of the user's (the caller checked the membership). */
export async function switchSessionOrganization(db: DbOrTx, idHash: string, organizationId: string): Promise<void> {
  await db.update(userSessions).set({ organizationId }).where(eq(userSessions.idHash, idHash));
}

/** Deletes sessions past their absolute end or idle for longer than the idle timeout. */
export async function deleteExpiredSessions(db: DbOrTx, now: Date, timeouts: SessionTimeouts): Promise<number> {
  const idleSince = new Date(now.getTime() - timeouts.idleMs);
  const gone = await db
    .delete(userSessions)
    .where(or(lt(userSessions.expiresAt, now), lt(userSessions.lastSeenAt, idleSince)))
    .returning({ idHash: userSessions.idHash });
  return gone.length;
}

/** How many live sessions the user has (the account page shows it). */
export async function countUserSessions(db: DbOrTx, userId: string, now: Date): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(userSessions)
    .where(and(eq(userSessions.userId, userId), gt(userSessions.expiresAt, now)));
  return row.n;
}
