import { decodeBase58, encodeBase58, getBytes, sha256, toBeHex, concat } from 'ethers';

/** Base58 and base58check, the text form of Tron and Solana addresses (and of some secrets the pool refuses). */

const BASE58_RE = /^[1-9A-HJ-NP-Za-km-z]+$/;

/** Whether a text uses only the base58 alphabet. */
export function isBase58(text: string): boolean {
  return BASE58_RE.test(text);
}

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

/** base58check of a payload: base58(payload ‖ checksum). */
export function base58CheckEncode(payload: Uint8Array): string {
  return encodeBase58(concat([payload, checksum(payload)]));
}
