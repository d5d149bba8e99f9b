import { randomBytes } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { HDNodeWallet } from 'ethers';
import { generateKeyPairSigner } from '@solana/kit';
import type { Database } from '../../db/client';
import { poolAddresses } from '../../db/schema';
import { derivePoolAddresses } from '../../core/pool/import';
import { getServiceState, setServiceState } from '../../core/platform/service-state';

/**
 * The local organization's development pool: watch-only EVM and Tron addresses derived
 * (non-hardened 0/i) from one development extended public key generated here, and Solana
 * addresses (ed25519 keys cannot be derived from a public key: fresh key pairs, self_managed).
 * The private keys are discarded at once and never printed or stored: tokens sent to these
 * addresses on the local chains are test tokens nobody needs back.
 */
export const DEV_XPUB_STATE_KEY = 'local_dev_xpub';

export async function seedLocalDevPool(db: Database, organizationId: string, count = 100): Promise<{ added: number; xpub: string }> {
  let xpub = await getServiceState<string>(db, DEV_XPUB_STATE_KEY);
  if (!xpub) {
    xpub = HDNodeWallet.fromSeed(randomBytes(32)).neuter().extendedKey;
    await setServiceState(db, DEV_XPUB_STATE_KEY, xpub);
  }
  let added = 0;
  // Each family is seeded when it has no address yet, so a database made before Tron existed gets
  // its Tron addresses on the next start (from the same xpub).
  for (const protocol of ['evm', 'tron'] as const) {
    const [{ n }] = await db
      .select({ n: sql<number>`count(*)::int` })
      .from(poolAddresses)
      .where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, protocol)));
    if (n > 0) continue;
    // The pool's own derivation (watch-only, non-hardened 0/i).
    const result = await derivePoolAddresses(db, { organizationId, protocol, masterPublicKey: xpub, start: 0, count, now: new Date() });
    added += result.imported;
  }
  added += await seedSolanaDevAddresses(db, organizationId, count);
  return { added, xpub };
}

/**
 * On every local start: organizations whose pool was seeded from the development xpub get the
 * families added since (a local database from before Tron gets its 100 Tron addresses).
 */
export async function upgradeLocalDevPools(db: Database): Promise<number> {
  const xpub = await getServiceState<string>(db, DEV_XPUB_STATE_KEY);
  if (!xpub) return 0;
  const orgs = await db
    .selectDistinct({ organizationId: poolAddresses.organizationId })
    .from(poolAddresses)
    .where(and(eq(poolAddresses.protocol, 'evm'), eq(poolAddresses.masterPublicKey, xpub)));
  let added = 0;
  for (const { organizationId } of orgs) added += (await seedLocalDevPool(db, organizationId)).added;
  return added;
}

/** Watch-only Solana addresses for the local organization when it has none (their keys are dropped here). */
async function seedSolanaDevAddresses(db: Database, organizationId: string, count: number): Promise<number> {
  const [{ n }] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(poolAddresses)
    .where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, 'solana')));
  if (n > 0) return 0;
  const addresses = await Promise.all(Array.from({ length: count }, async () => (await generateKeyPairSigner()).address as string));
  const inserted = await db
    .insert(poolAddresses)
    .values(addresses.map((address) => ({ organizationId, protocol: 'solana' as const, address, mode: 'self_managed' as const, status: 'available' as const })))
    .onConflictDoNothing()
    .returning({ id: poolAddresses.id });
  return inserted.length;
}
