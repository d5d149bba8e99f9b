import { asc, eq } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { apiKeys, organizations } from '../../db/schema';
import { notFound } from '../platform/errors';
import type { Caller } from './organizations';

/**
 * What an operator (the admin CLI, on the database's own credentials) may do across tenants. The
 * API never calls these: a merchant's key only ever sees its own organization.
 */
export async function listAllOrganizations(db: DbOrTx): Promise<{ id: string; name: string; createdAt: Date }[]> {
  return db.select({ id: organizations.id, name: organizations.name, createdAt: organizations.createdAt }).from(organizations).orderBy(asc(organizations.createdAt), asc(organizations.id));
}

/**
 * The operator acting as an Owner of one organization (so the domain's rules still hold: the last
 * Owner key cannot be revoked). Throws "Organization not found" for an unknown id.
 */
export async function operatorCallerFor(db: DbOrTx, organizationId: string): Promise<Caller> {
  const [row] = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId));
  if (!row) throw notFound(`Organization ${organizationId}`);
  return { organizationId, keyId: 'operator', role: 'owner' };
}

/** The organization a key belongs to (for revoking a key by its id alone). */
export async function organizationOfApiKey(db: DbOrTx, keyId: string): Promise<string> {
  const [row] = await db.select({ organizationId: apiKeys.organizationId }).from(apiKeys).where(eq(apiKeys.id, keyId));
  if (!row) throw notFound(`API key ${keyId}`);
  return row.organizationId;
}
