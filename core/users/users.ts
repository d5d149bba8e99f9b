import { and, asc, eq, sql } from 'drizzle-orm';
import type { Database, DbOrTx } from '../../db/client';
import { memberships, organizations, users } from '../../db/schema';
import { AppError, forbidden, isUniqueViolation, notFound, validationError } from '../platform/errors';
import { newId } from '../platform/ids';
import type { Caller } from '../organizations/organizations';
import { ROLES, roleAtLeast, type Role } from '../organizations/roles';
import { DECOY_PASSWORD_HASH, hashPassword, passwordProblem, verifyPassword } from './passwords';
import { issueSignInLink } from './sign-in-links';
import { recordAudit } from '../platform/audit';

/**
 * People who sign in to the dashboard, and their memberships: a user belongs to organizations
 * with the API keys' four roles (core/organizations/roles.ts) and may belong to several.
 */
export interface UserView {
  id: string;
  email: string;
  hasPassword: boolean;
  createdAt: Date;
}

export interface MembershipView {
  organizationId: string;
  organizationName: string;
  role: Role;
}

export interface MemberView {
  userId: string;
  email: string;
  role: Role;
  hasPassword: boolean;
  createdAt: Date;
}

const EMAIL = /^[^\s@<>"']{1,64}@[^\s@<>"']{1,190}\.[^\s@<>"']{1,63}$/;

export function normalizeEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!EMAIL.test(e) || e.length > 254) throw validationError('Enter a valid e-mail address');
  return e;
}

function toUserView(row: typeof users.$inferSelect): UserView {
  return { id: row.id, email: row.email, hasPassword: row.passwordHash !== null, createdAt: row.createdAt };
}

/**
 * A user acting in one organization, as the domain operations take it: the same Caller as an API
 * key's, its keyId being the user's id (usr_…), so the dashboard calls exactly what the API calls.
 */
export function userCaller(userId: string, organizationId: string, role: Role): Caller {
  return { organizationId, keyId: userId, role };
}

export async function findUserByEmail(db: DbOrTx, email: string): Promise<UserView | null> {
  const [row] = await db.select().from(users).where(sql`lower(${users.email}) = ${email.trim().toLowerCase()}`);
  return row ? toUserView(row) : null;
}

export async function getUser(db: DbOrTx, userId: string): Promise<UserView> {
  const [row] = await db.select().from(users).where(eq(users.id, userId));
  if (!row) throw notFound('User');
  return toUserView(row);
}

/** The user of this e-mail, created (without a password) when there is none. */
export async function ensureUser(db: DbOrTx, emailInput: string): Promise<UserView> {
  const email = normalizeEmail(emailInput);
  const existing = await findUserByEmail(db, email);
  if (existing) return existing;
  try {
    const [row] = await db.insert(users).values({ id: newId('usr'), email }).returning();
    return toUserView(row);
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return (await findUserByEmail(db, email))!;
  }
}

/**
 * The user whose e-mail and password these are, or null. An unknown e-mail or a user without a
 * password costs the same scrypt work as a wrong password: the answer's timing tells nothing.
 */
export async function checkPassword(db: DbOrTx, email: string, password: string): Promise<UserView | null> {
  const [row] = await db.select().from(users).where(sql`lower(${users.email}) = ${email.trim().toLowerCase()}`);
  const ok = await verifyPassword(password.slice(0, 1024), row?.passwordHash ?? DECOY_PASSWORD_HASH);
  return ok && row?.passwordHash ? toUserView(row) : null;
}

/** Whether the password is the user's current one (true when the user has none yet: signed in by link). */
export async function currentPasswordMatches(db: DbOrTx, userId: string, password: string): Promise<boolean> {
  const [row] = await db.select({ passwordHash: users.passwordHash }).from(users).where(eq(users.id, userId));
  return !row?.passwordHash || (await verifyPassword(password.slice(0, 1024), row.passwordHash));
}

/** Sets a new password (its caller revokes the user's other sessions). */
export async function setPassword(db: DbOrTx, userId: string, password: string): Promise<void> {
  const problem = passwordProblem(password);
  if (problem) throw validationError(problem);
  const passwordHash = await hashPassword(password);
  const updated = await db.update(users).set({ passwordHash, passwordChangedAt: sql`now()` }).where(eq(users.id, userId)).returning({ id: users.id });
  if (updated.length === 0) throw notFound('User');
}

/** The organizations a user belongs to, by name. */
export async function listMemberships(db: DbOrTx, userId: string): Promise<MembershipView[]> {
  return db
    .select({ organizationId: memberships.organizationId, organizationName: organizations.name, role: memberships.role })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
    .where(eq(memberships.userId, userId))
    .orderBy(asc(organizations.name), asc(organizations.id));
}

export async function membershipRole(db: DbOrTx, userId: string, organizationId: string): Promise<Role | null> {
  const [row] = await db
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.userId, userId), eq(memberships.organizationId, organizationId)));
  return row?.role ?? null;
}

export async function listMembers(db: DbOrTx, caller: Caller): Promise<MemberView[]> {
  return (
    await db
      .select({ userId: users.id, email: users.email, role: memberships.role, passwordHash: users.passwordHash, createdAt: memberships.createdAt })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(eq(memberships.organizationId, caller.organizationId))
      .orderBy(asc(memberships.createdAt), asc(users.id))
  ).map(({ passwordHash, ...m }) => ({ ...m, hasPassword: passwordHash !== null }));
}

function checkRole(role: string): Role {
  if (!(ROLES as readonly string[]).includes(role)) throw validationError(`role must be one of ${ROLES.join(', ')}`);
  return role as Role;
}

/** The rules API keys follow (createApiKey): only an Owner grants Owner, nobody grants above their own role. */
function requireMayGrant(caller: Caller, role: Role): void {
  if (!roleAtLeast(caller.role, 'admin')) throw forbidden('Managing members requires the admin role or higher');
  if (role === 'owner' && caller.role !== 'owner') throw forbidden('Only an Owner can make Owners');
  if (!roleAtLeast(caller.role, role)) throw forbidden('You cannot grant a role above your own');
}

/**
 * Adds a person (by e-mail, created when new) to the caller's organization with a role. An existing
 * member is a CONFLICT: their role is changed with changeMemberRole.
 */
export async function addMember(db: Database, caller: Caller, input: { email: string; role: string }): Promise<{ user: UserView; role: Role }> {
  const role = checkRole(input.role);
  requireMayGrant(caller, role);
  return db.transaction(async (tx) => {
    const user = await ensureUser(tx, input.email);
    const inserted = await tx
      .insert(memberships)
      .values({ userId: user.id, organizationId: caller.organizationId, role })
      .onConflictDoNothing()
      .returning({ role: memberships.role });
    if (inserted.length === 0) throw new AppError('CONFLICT', `${user.email} is already a member of this organization`);
    return { user, role };
  });
}

/**
 * Locks the organization's memberships and checks that after `change` at least one Owner is left.
 * Two Owners demoting each other at once cannot leave none: both lock the same rows.
 */
async function lockAndCheckOwners(tx: DbOrTx, organizationId: string, userId: string, newRole: Role | null): Promise<Role> {
  const rows = await tx.select().from(memberships).where(eq(memberships.organizationId, organizationId)).for('update');
  const target = rows.find((r) => r.userId === userId);
  if (!target) throw notFound('Member');
  const ownersLeft = rows.filter((r) => (r.userId === userId ? newRole === 'owner' : r.role === 'owner')).length;
  if (target.role === 'owner' && ownersLeft === 0) throw new AppError('CONFLICT', 'The last Owner of an organization cannot be removed or demoted');
  return target.role;
}

export async function changeMemberRole(db: Database, caller: Caller, userId: string, roleInput: string): Promise<MemberView> {
  const role = checkRole(roleInput);
  requireMayGrant(caller, role);
  return db.transaction(async (tx) => {
    const current = await lockAndCheckOwners(tx, caller.organizationId, userId, role);
    if (current === 'owner' && caller.role !== 'owner') throw forbidden('Only an Owner can change an Owner');
    await tx.update(memberships).set({ role }).where(and(eq(memberships.userId, userId), eq(memberships.organizationId, caller.organizationId)));
    const member = (await listMembers(tx, caller)).find((m) => m.userId === userId)!;
    return member;
  });
}

export async function removeMember(db: Database, caller: Caller, userId: string): Promise<MemberView> {
  if (!roleAtLeast(caller.role, 'admin')) throw forbidden('Managing members requires the admin role or higher');
  return db.transaction(async (tx) => {
    const member = (await listMembers(tx, caller)).find((m) => m.userId === userId);
    const current = await lockAndCheckOwners(tx, caller.organizationId, userId, null);
    if (current === 'owner' && caller.role !== 'owner') throw forbidden('Only an Owner can remove an Owner');
    await tx.delete(memberships).where(and(eq(memberships.userId, userId), eq(memberships.organizationId, caller.organizationId)));
    return member!;
  });
}

/** The operator (admin CLI) adds a user to an organization with any role, or sets the role of an existing member. */
export async function putMembershipAsOperator(db: Database, organizationId: string, email: string, roleInput: string): Promise<{ user: UserView; role: Role }> {
  const role = checkRole(roleInput);
  return db.transaction(async (tx) => {
    const [org] = await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId));
    if (!org) throw notFound(`Organization ${organizationId}`);
    const user = await ensureUser(tx, email);
    await tx
      .insert(memberships)
      .values({ userId: user.id, organizationId, role })
      .onConflictDoUpdate({ target: [memberships.userId, memberships.organizationId], set: { role } });
    return { user, role };
  });
}

/**
 * The operator's way in for a person (admin CLI create-user, the first start): the membership,
 * then a one-time sign-in link's token (the caller prints `<base>/dashboard/link/<token>`).
 */
export async function operatorSignInLink(
  db: Database,
  input: { organizationId: string; email: string; role: string; now: Date },
): Promise<{ user: UserView; role: Role; token: string }> {
  const { user, role } = await putMembershipAsOperator(db, input.organizationId, input.email, input.role);
  const token = await issueSignInLink(db, user.id, 'sign-in', input.now);
  await recordAudit(db, { organizationId: input.organizationId, userId: null, actor: 'operator', action: 'member.added_by_operator', target: user.email, detail: { role } });
  return { user, role, token };
}
