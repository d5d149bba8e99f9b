import { createHash } from 'node:crypto';
import { getBase58Decoder } from '@solana/kit';

/**
 * Solana Pay transfer requests (https://docs.solanapay.com/spec): what a Solana order's QR code and
 * wallet button carry, `solana:<owner>?amount=<decimal>&spl-token=<mint>&reference=<key>&label=…&message=…`.
 * The reference is a 32-byte key unique to the order, derived from its id (so it needs no column
 * and is the same on every page view and process); a wallet adds it to the payment's account list,
 * where `getSignaturesForAddress(reference)` can find it. Crediting stays the owner-and-balance rule.
 */
export function solanaPayReference(orderId: string): string {
  return getBase58Decoder().decode(createHash('sha256').update(`stablegate:solana-pay-reference:v1:${orderId}`).digest());
}

export function solanaPayUri(to: string, p: { amount: string; mint: string; reference: string; label?: string; message?: string }): string {
  const query = new URLSearchParams({ amount: p.amount, 'spl-token': p.mint, reference: p.reference });
  if (p.label) query.set('label', p.label);
  if (p.message) query.set('message', p.message);
  // URLSearchParams writes spaces as '+'; Solana Pay wants percent-encoding.
  return `solana:${to}?${query.toString().replace(/\+/g, '%20')}`;
}
