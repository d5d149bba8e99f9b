import { base58Bytes, isBase58 } from '../base58';
import type { AddressCheck } from '../chain';

/** A Solana address (a 32-byte public key in base58), kept in its exact form. */
export function checkSolanaAddress(text: string): AddressCheck {
  if (text.length < 32 || text.length > 44 || !isBase58(text)) {
    return { ok: false, error: 'not a Solana address: expected 32 to 44 base58 characters' };
  }
  const bytes = base58Bytes(text);
  if (!bytes || bytes.length !== 32) return { ok: false, error: `not a Solana address: decodes to ${bytes?.length ?? 0} bytes, expected a 32-byte public key` };
  return { ok: true, address: text };
}
