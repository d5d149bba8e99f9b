import { getBytes, hexlify } from 'ethers';
import { base58CheckPayload, checkTronAddress, normalizeAddress, tronAddressFromEvm } from '../addresses';

/**
 * Tron address forms (design.md §10): T… base58check everywhere outside the adapter; inside it,
 * `41`-prefixed hex (top-level `contract_address`, API parameters) and bare 20-byte hex (log
 * entries' `address`, the last 20 bytes of a topic).
 */

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
  return normalizeAddress('tron', address);
}
