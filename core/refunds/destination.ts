import { and, eq } from 'drizzle-orm';
import { isOffCurveAddress, address as solanaAddress } from '@solana/kit';
import type { DbOrTx } from '../../db/client';
import { poolAddresses } from '../../db/schema';
import { checkAddress } from '../chains/addresses';
import type { Protocol } from '../chains/chain';

/**
 * Why a destination a payer typed on the claim page is refused: a code the page turns into a
 * sentence in its language (api/pages/refund/), and the family's own message for a malformed one.
 */
export type DestinationRefusal =
  | { code: 'empty' }
  | { code: 'mismatch' }
  | { code: 'invalid'; detail: string }
  | { code: 'zero_address' }
  | { code: 'token_contract' }
  | { code: 'pool_address' }
  | { code: 'off_curve' };

export type DestinationCheck = { ok: true; address: string } | { ok: false; refusal: DestinationRefusal };

const ZERO_ADDRESSES: ReadonlySet<string> = new Set([
  '0x0000000000000000000000000000000000000000',
  // Tron's zero address (base58check of 0x41 and 20 zero bytes), and Solana's all-zero key (the System Program).
  'T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb',
  '11111111111111111111111111111111',
]);

/**
 * Checks a destination for a refund in `protocol`, typed twice (`entry`, `confirmation`), before
 * anything is written:
 * - the family's address check (EVM: EIP-55 checksum, mixed case with a wrong one refused; Tron:
 *   base58check; Solana: a 32-byte key) through the one authority, core/chains/addresses.ts;
 * - the two entries are the same address (compared in the normalised form: an all-lowercase EVM
 *   address and its checksum form are one address);
 * - never the zero address, the token contract itself (tokens sent there are lost), or a pool
 *   address (the organization's own or any other: the detection watches every pool address, and
 *   a refund paid there would be read as an incoming payment, design.md §4d);
 * - on Solana the owner must be on the ed25519 curve: an off-curve address (a program-derived
 *   address) has no key that can move the tokens its token account receives.
 */
export async function checkRefundDestination(
  db: DbOrTx,
  refund: { protocol: Protocol; tokenAddress: string },
  entry: string,
  confirmation: string,
): Promise<DestinationCheck> {
  const first = entry.trim();
  const second = confirmation.trim();
  if (first === '') return { ok: false, refusal: { code: 'empty' } };
  const checked = checkAddress(refund.protocol, first);
  if (!checked.ok) return { ok: false, refusal: { code: 'invalid', detail: checked.error } };
  const again = checkAddress(refund.protocol, second);
  if (!again.ok || again.address !== checked.address) return { ok: false, refusal: { code: 'mismatch' } };
  const address = checked.address;
  if (ZERO_ADDRESSES.has(address)) return { ok: false, refusal: { code: 'zero_address' } };
  if (address === refund.tokenAddress || (refund.protocol === 'evm' && address.toLowerCase() === refund.tokenAddress.toLowerCase())) {
    return { ok: false, refusal: { code: 'token_contract' } };
  }
  if (refund.protocol === 'solana' && isOffCurveAddress(solanaAddress(address))) return { ok: false, refusal: { code: 'off_curve' } };
  const [pool] = await db
    .select({ id: poolAddresses.id })
    .from(poolAddresses)
    // Any organization's: detection watches every pool address, and a payment to one is read as incoming.
    .where(and(eq(poolAddresses.protocol, refund.protocol), eq(poolAddresses.address, address)))
    .limit(1);
  if (pool) return { ok: false, refusal: { code: 'pool_address' } };
  return { ok: true, address };
}

/** A refused destination in a sentence for the API and the dashboard (the merchant's own input; the claim page has its own, translated). */
export function destinationRefusalMessage(refusal: DestinationRefusal): string {
  switch (refusal.code) {
    case 'empty':
      return 'destination must not be empty';
    case 'mismatch':
      return 'destination and its confirmation are not the same address';
    case 'invalid':
      return `destination is not a valid address on this chain: ${refusal.detail}`;
    case 'zero_address':
      return 'destination is the zero address: tokens sent there are lost';
    case 'token_contract':
      return 'destination is the token contract itself: tokens sent there are lost';
    case 'pool_address':
      return 'destination is a pool address of this service: a payment there would be read as an incoming payment';
    case 'off_curve':
      return 'destination is off the ed25519 curve (a program-derived address): no key can move tokens sent to it; give a wallet address';
  }
}
