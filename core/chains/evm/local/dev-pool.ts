import { randomBytes } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { HDNodeWallet } from 'ethers';
import type { Database } from '../../../../db/client';
import { poolAddresses } from '../../../../db/schema';
import { getServiceState, setServiceState } from '../../../service-state';

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
  const root = HDNodeWallet.fromExtendedKey(xpub);
  const external = root.deriveChild(0);
  const now = Date.now();
  const rows = Array.from({ length: count }, (_, i) => ({
    organizationId,
    protocol: 'evm' as const,
    address: external.deriveChild(i).address,
    mode: 'hd_wallet' as const,
    derivationIndex: i,
    masterPublicKey: xpub!,
    status: 'available' as const,
    createdAt: new Date(now + i),
  }));
  await db.insert(poolAddresses).values(rows).onConflictDoNothing();
  return { added: rows.length, xpub };
}
