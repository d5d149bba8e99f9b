import { concat, getBytes, hexlify } from 'ethers';
import { base58Bytes, base58CheckEncode, base58CheckPayload, isBase58 } from '../base58';
import type { AddressCheck } from '../chain';

/**
 * Tron address forms (design.md §10): T… base58check everywhere outside the adapter; inside it,
 * `41`-prefixed hex (top-level `contract_address`, API parameters) and bare 20-byte hex (log
 * entries' `address`, the last 20 bytes of a topic).
 */

/** A Tron address: base58check of 0x41 and 20 bytes, kept in its T… form. */
export function checkTronAddress(text: string): AddressCheck {
  if (!text.startsWith('T')) return { ok: false, error: 'not a Tron address: expected base58check starting with T' };
  if (text.length !== 34 || !isBase58(text)) return { ok: false, error: 'not a Tron address: expected 34 base58 characters starting with T' };
  const bytes = base58Bytes(text);
  if (!bytes || bytes.length !== 25 || bytes[0] !== 0x41) return { ok: false, error: 'not a Tron address: does not decode to 0x41 followed by 20 bytes' };
  if (!base58CheckPayload(text)) return { ok: false, error: 'invalid Tron checksum' };
  return { ok: true, address: text };
}

/** Tron form of a 20-byte EVM address: base58check(0x41 ‖ address) (the same secp256k1 key). */
export function tronAddressFromEvm(evmAddress: string): string {
  return base58CheckEncode(getBytes(concat(['0x41', evmAddress])));
}

/** T… from 20-byte hex with or without 0x (a log's address, a topic's last 20 bytes). */
export function tronFromHex20(hex20: string): string {
  const clean = hex20.replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]{40}$/.test(clean)) throw new Error(`not a 20-byte hex address: ${hex20}`);
  return tronAddressFromEvm(`0x${clean}`);
}

/** Bare lower-case 20-byte hex of a T… address (the form of `log[].address`), or null. */
export function hex20FromTron(address: string): string | null {
  if (!checkTronAddress(address).ok) return null;
  const payload = base58CheckPayload(address);
  return payload ? hexlify(payload.subarray(1)).slice(2) : null;
}

/** `41`-prefixed hex of a T… address (HTTP API parameters with visible=false). */
export function hex41FromTron(address: string): string | null {
  const hex = hex20FromTron(address);
  return hex ? `41${hex}` : null;
}

/** T… from a 41-prefixed hex address. */
export function tronFromHex41(hex41: string): string {
  const bytes = getBytes(`0x${hex41.replace(/^0x/i, '')}`);
  if (bytes.length !== 21 || bytes[0] !== 0x41) throw new Error(`not a 41-prefixed Tron hex address: ${hex41}`);
  return tronFromHex20(hexlify(bytes.subarray(1)));
}

export function normalizeTronAddress(address: string): string | null {
  const checked = checkTronAddress(address);
  return checked.ok ? checked.address : null;
}
