import { concat, decodeBase58, encodeBase58, getAddress, getBytes, sha256, toBeHex } from 'ethers';
import type { Protocol } from './registry';

/**
 * Address format rules of the pool import (spec "Address pool record"), one function per protocol
 * family. Each returns the normalised address or a reason a person can act on.
 */
export type AddressCheck = { ok: true; address: string } | { ok: false; error: string };

const BASE58_RE = /^[1-9A-HJ-NP-Za-km-z]+$/;
const EVM_RE = /^0x[0-9a-fA-F]{40}$/;

/** Bytes of a base58 string; each leading '1' is a zero byte (a bigint would lose them). */
export function base58Bytes(text: string): Uint8Array | null {
  if (!BASE58_RE.test(text)) return null;
  let zeros = 0;
  while (zeros < text.length && text[zeros] === '1') zeros++;
  const rest = text.slice(zeros);
  const body = rest.length === 0 ? new Uint8Array(0) : getBytes(toBeHex(decodeBase58(rest)));
  const out = new Uint8Array(zeros + body.length);
  out.set(body, zeros);
  return out;
}

/** The 4-byte double-SHA-256 checksum of base58check. */
function checksum(payload: Uint8Array): Uint8Array {
  return getBytes(sha256(sha256(payload))).subarray(0, 4);
}

/** Decodes base58check: the payload when the checksum holds, otherwise null. */
export function base58CheckPayload(text: string): Uint8Array | null {
  const bytes = base58Bytes(text);
  if (!bytes || bytes.length < 5) return null;
  const payload = bytes.subarray(0, bytes.length - 4);
  const sum = checksum(payload);
  for (let i = 0; i < 4; i++) if (bytes[bytes.length - 4 + i] !== sum[i]) return null;
  return payload;
}

export function checkEvmAddress(text: string): AddressCheck {
  if (!EVM_RE.test(text)) return { ok: false, error: 'not an EVM address: expected 0x followed by 40 hexadecimal characters' };
  try {
    return { ok: true, address: getAddress(text) };
  } catch {
    return { ok: false, error: 'invalid EVM checksum: mixed-case address whose capitalisation does not match its EIP-55 checksum' };
  }
}

export function checkTronAddress(text: string): AddressCheck {
  if (!text.startsWith('T')) return { ok: false, error: 'not a Tron address: expected base58check starting with T' };
  if (text.length !== 34 || !BASE58_RE.test(text)) return { ok: false, error: 'not a Tron address: expected 34 base58 characters starting with T' };
  const bytes = base58Bytes(text);
  if (!bytes || bytes.length !== 25 || bytes[0] !== 0x41) return { ok: false, error: 'not a Tron address: does not decode to 0x41 followed by 20 bytes' };
  if (!base58CheckPayload(text)) return { ok: false, error: 'invalid Tron checksum' };
  return { ok: true, address: text };
}

export function checkSolanaAddress(text: string): AddressCheck {
  if (text.length < 32 || text.length > 44 || !BASE58_RE.test(text)) {
    return { ok: false, error: 'not a Solana address: expected 32 to 44 base58 characters' };
  }
  const bytes = base58Bytes(text);
  if (!bytes || bytes.length !== 32) return { ok: false, error: `not a Solana address: decodes to ${bytes?.length ?? 0} bytes, expected a 32-byte public key` };
  return { ok: true, address: text };
}

export function checkAddress(protocol: Protocol, text: string): AddressCheck {
  if (protocol === 'evm') return checkEvmAddress(text);
  if (protocol === 'tron') return checkTronAddress(text);
  return checkSolanaAddress(text);
}

/**
 * The one authority on an address's normalised form (EVM: EIP-55 checksum; Tron: base58 T…;
 * Solana: base58), or null when it is not a valid address of the family. Pool addresses are stored
 * in this form (import and derivation go through checkAddress), chain adapters report recipients in
 * it, and the core compares addresses only in it.
 */
export function normalizeAddress(protocol: Protocol, text: string): string | null {
  const checked = checkAddress(protocol, text);
  return checked.ok ? checked.address : null;
}

/** Tron form of a 20-byte EVM address: base58check(0x41 ‖ address). */
export function tronAddressFromEvm(evmAddress: string): string {
  const payload = getBytes(concat(['0x41', evmAddress]));
  return encodeBase58(concat([payload, checksum(payload)]));
}
