import { randomBytes } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { HDNodeWallet } from 'ethers';
import type { Database } from '../../db/client';
import { poolAddresses } from '../../db/schema';
import { derivePoolAddresses } from '../../core/pool/import';
import { getServiceState, setServiceState } from '../../core/service-state';

/**
 * The local organization's development pool: watch-only EVM addresses derived (non-hardened
 * 0/i) from a development extended public key generated here. The private key is discarded at
 * once and never printed or stored: tokens sent to these addresses on the local chain are test
 * tokens nobody needs back.
 */
export const DEV_XPUB_STATE_KEY = 'local_dev_xpub';

export async function seedLocalDevPool(db: Database, organizationId: string, count = 100): Promise<{ added: number; xpub: string }> {
  let xpub = await getServiceState<string>(db, DEV_XPUB_STATE_KEY);
  if (!xpub) {
    xpub = HDNodeWallet.fromSeed(randomBytes(32)).neuter().extendedKey;
    await setServiceState(db, DEV_XPUB_STATE_KEY, xpub);
  }
  const [{ n }] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(poolAddresses)
    .where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, 'evm')));
  if (n > 0) return { added: 0, xpub };
  // The pool's own derivation (watch-only, non-hardened 0/i).
  const result = await derivePoolAddresses(db, { organizationId, protocol: 'evm', masterPublicKey: xpub, start: 0, count, now: new Date() });
  return { added: result.imported, xpub };
}
