import { randomBytes } from 'node:crypto';
import { concat, encodeBase58, getAddress, hexlify, sha256 } from 'ethers';

/** Random valid addresses per protocol family (no database: the simulation uses them too). */

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
