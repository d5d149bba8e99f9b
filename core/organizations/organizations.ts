import { and, asc, count, eq, isNull, sql } from 'drizzle-orm';
import { columnsReader, prepareStatement, type Database, type DbOrTx } from '../../db/client';
import { apiKeys, organizations } from '../../db/schema';
import { AppError, forbidden, notFound } from '../platform/errors';
import { newId } from '../platform/ids';
import { sortedBy } from '../platform/list-order';
import { roleAtLeast, type Role } from './roles';
import { constantTimeEqual, randomToken, sha256Hex } from '../platform/secrets';
import { paginate } from '../platform/sql-fragments';

export interface Caller {
  organizationId: string;
  keyId: string;
  role: Role;
}

export interface ApiKeyView {
  id: string;
  organizationId: string;
  name: string;
  role: Role;
  keyPrefix: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** A new key: `pk_` + 32 random bytes. Only its SHA-256 is stored. */
function generateKey(): { key: string; hash: string; prefix: string } {
  const key = `pk_${randomToken(32)}`;
  return { key, hash: sha256Hex(key), prefix: key.slice(0, 10) };
}

export async function createOrganization(db: Database, name: string): Promise<{ organizationId: string; ownerKey: { id: string; key: string } }> {
  return db.transaction(async (tx) => {
    const organizationId = newId('org');
    await tx.insert(organizations).values({ id: organizationId, name });
    const created = await insertKey(tx, organizationId, 'Owner key', 'owner');
    return { organizationId, ownerKey: { id: created.view.id, key: created.key } };
  });
}

async function insertKey(tx: DbOrTx, organizationId: string, name: string, role: Role): Promise<{ view: ApiKeyView; key: string }> {
  const { key, hash, prefix } = generateKey();
  const [row] = await tx
    .insert(apiKeys)
    .values({ id: newId('key'), organizationId, name, role, keyHash: hash, keyPrefix: prefix })
    .returning();
  return { view: toView(row), key };
}

function toView(row: typeof apiKeys.$inferSelect): ApiKeyView {
  return {
    id: row.id,
    organizationId: row.organizationId,
    name: row.name,
    role: row.role,
    keyPrefix: row.keyPrefix,
    createdAt: row.createdAt,
    revokedAt: row.revokedAt,
  };
}

/** The columns authentication reads of a key (ApiKeyRecord). */
const KEY_COLUMNS = columnsReader(apiKeys, ['id', 'organizationId', 'role', 'keyHash', 'revokedAt']);

/**
 * The key lookup runs on every API request: one prepared statement (one round trip; db/client.ts
 * prepareStatement says why drizzle's default costs two). Hand-written for that; its text is
 * snapshotted (test/foundation/hand-written-sql.test.ts).
 */
const keyLookupStatement = prepareStatement<{ hash: string }>('organizations.api_key_by_hash', sql`
  select ${sql.raw(KEY_COLUMNS.names.join(', '))} from api_keys where key_hash = ${sql.placeholder('hash')} limit 1`);

/** What authentication reads of a key. */
export interface ApiKeyRecord {
  id: string;
  organizationId: string;
  role: Role;
  keyHash: string;
  revokedAt: Date | null;
}

/** Somewhere that may already know a key's record by its hash (the API instance's key cache). */
export interface ApiKeyLookup {
  find(keyHash: string, load: () => Promise<ApiKeyRecord | null>): Promise<ApiKeyRecord | null>;
}

/** The caller a presented key stands for; null for an unknown or revoked key. */
export async function authenticateApiKey(db: Database, presented: string, cache?: ApiKeyLookup): Promise<Caller | null> {
  if (!/^pk_[A-Za-z0-9_-]{20,100}$/.test(presented)) return null;
  const hash = sha256Hex(presented);
  const load = async () => {
    const [raw] = await keyLookupStatement.run(db, { hash });
    return raw ? (KEY_COLUMNS.read(raw) as ApiKeyRecord) : null;
  };
  const row = cache ? await cache.find(hash, load) : await load();
  if (!row || row.revokedAt || !constantTimeEqual(row.keyHash, hash)) return null;
  return { organizationId: row.organizationId, keyId: row.id, role: row.role };
}

export async function getOrganization(db: DbOrTx, caller: Caller) {
  const [row] = await db.select().from(organizations).where(eq(organizations.id, caller.organizationId));
  if (!row) throw notFound('Organization');
  return { id: row.id, name: row.name, createdAt: row.createdAt };
}

function requireOwnOrganization(caller: Caller, organizationId: string): void {
  // Another tenant's id answers exactly like an id that does not exist.
  if (organizationId !== caller.organizationId) throw notFound('Organization');
}

export async function createApiKey(db: Database, caller: Caller, organizationId: string, input: { name: string; role: Role }) {
  requireOwnOrganization(caller, organizationId);
  if (input.role === 'owner' && caller.role !== 'owner') throw forbidden('Only an Owner key can create Owner keys');
  if (!roleAtLeast(caller.role, input.role)) throw forbidden('A key cannot grant a role above its own');
  const { view, key } = await insertKey(db, organizationId, input.name, input.role);
  return { ...view, key };
}

export async function listApiKeys(db: DbOrTx, caller: Caller, organizationId: string): Promise<ApiKeyView[]> {
  requireOwnOrganization(caller, organizationId);
  const rows = await db.select().from(apiKeys).where(eq(apiKeys.organizationId, organizationId)).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
  return rows.map(toView);
}

export const API_KEY_SORT_FIELDS = ['createdAt', 'name', 'role'] as const;

/** One page of the organization's keys, oldest first by default (GET /organizations/:id/api-keys). */
export async function listApiKeysPage(
  db: DbOrTx,
  caller: Caller,
  organizationId: string,
  page: { page: number; limit: number; sortBy?: (typeof API_KEY_SORT_FIELDS)[number]; sortOrder?: 'asc' | 'desc' },
): Promise<{ items: ApiKeyView[]; total: number }> {
  requireOwnOrganization(caller, organizationId);
  const where = eq(apiKeys.organizationId, organizationId);
  const [{ n }] = await db.select({ n: count() }).from(apiKeys).where(where);
  const rows = await paginate(
    db
      .select()
      .from(apiKeys)
      .where(where)
      .orderBy(...sortedBy(page.sortOrder ?? 'asc', { createdAt: apiKeys.createdAt, name: apiKeys.name, role: apiKeys.role }[page.sortBy ?? 'createdAt'], apiKeys.id))
      .$dynamic(),
    page,
  );
  return { items: rows.map(toView), total: n };
}

export async function revokeApiKey(db: Database, caller: Caller, keyId: string): Promise<ApiKeyView> {
  return db.transaction(async (tx) => {
    // Lock the organization's owner keys so two concurrent revocations cannot remove the last two.
    const [row] = await tx.select().from(apiKeys).where(and(eq(apiKeys.id, keyId), eq(apiKeys.organizationId, caller.organizationId))).for('update');
    if (!row) throw notFound('API key');
    if (row.revokedAt) return toView(row);
    if (row.role === 'owner') {
      if (caller.role !== 'owner') throw forbidden('Only an Owner key can revoke Owner keys');
      const owners = await tx
        .select({ id: apiKeys.id })
        .from(apiKeys)
        .where(and(eq(apiKeys.organizationId, caller.organizationId), eq(apiKeys.role, 'owner'), isNull(apiKeys.revokedAt)))
        .for('update');
      if (owners.length <= 1) throw new AppError('LAST_OWNER_KEY', 'The last Owner key of an organization cannot be revoked');
    }
    const [updated] = await tx.update(apiKeys).set({ revokedAt: sql`now()` }).where(eq(apiKeys.id, keyId)).returning();
    return toView(updated);
  });
}

export async function countOrganizations(db: DbOrTx): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(organizations);
  return row.n;
}
