import { poolAddresses } from '../../db/schema';
import { randomEvmAddress, randomSolanaAddress, randomTronAddress } from './addresses';
import { testDb } from './harness';

export { randomEvmAddress, randomSolanaAddress, randomTronAddress };

const RANDOM = { evm: randomEvmAddress, tron: randomTronAddress, solana: randomSolanaAddress } as const;

/**
 * Test fixture: puts `count` available addresses straight into an organization's pool (the import
 * endpoint is tested on its own). Returns them in creation order.
 */
export async function seedPoolAddresses(organizationId: string, protocol: 'evm' | 'tron' | 'solana', count: number, startAt = new Date()): Promise<string[]> {
  const rows = Array.from({ length: count }, (_, i) => ({
    organizationId,
    protocol,
    address: RANDOM[protocol](),
    mode: 'self_managed' as const,
    status: 'available' as const,
    createdAt: new Date(startAt.getTime() + i),
  }));
  for (let i = 0; i < rows.length; i += 1000) await testDb().insert(poolAddresses).values(rows.slice(i, i + 1000));
  return rows.map((r) => r.address);
}
