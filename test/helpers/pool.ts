import { randomBytes } from 'node:crypto';
import { concat, encodeBase58, getAddress, hexlify, sha256 } from 'ethers';
import { poolAddresses } from '../../db/schema';
import { testDb } from './harness';

/** A random checksummed EVM address. */
export function randomEvmAddress(): string {
  return getAddress(hexlify(randomBytes(20)));
}

/** A random valid Tron address (base58check of 0x41 + 20 bytes). */
export function randomTronAddress(): string {
  const payload = concat(['0x41', randomBytes(20)]);
  const checksum = sha256(sha256(payload)).slice(0, 10); // 0x + 4 bytes
  return encodeBase58(concat([payload, checksum]));
}

/** A random valid Solana address (base58 of 32 bytes). */
export function randomSolanaAddress(): string {
  return encodeBase58(concat(['0x01', randomBytes(31)]));
}

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
