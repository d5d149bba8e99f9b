import type { AddressCheck, Protocol } from './chain';
import { checkEvmAddress } from './evm/evm-address';
import { checkSolanaAddress } from './solana/solana-address';
import { checkTronAddress, tronAddressFromEvm } from './tron/tron-address';

/**
 * Address rules of the chain families (spec "Address pool record"): each family's own check lives
 * in its folder (chains/<family>/<family>-address.ts); the pool, deposits, detection and the
 * transfer filter ask here, by protocol, and never know a family's format.
 */
const CHECKS: Record<Protocol, (text: string) => AddressCheck> = {
  evm: checkEvmAddress,
  tron: checkTronAddress,
  solana: checkSolanaAddress,
};

export type { AddressCheck };

/** The normalised address, or a reason a person can act on. */
export function checkAddress(protocol: Protocol, text: string): AddressCheck {
  return CHECKS[protocol](text);
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

/** A secp256k1 key's address (given in its EVM form) in a family of such keys: EVM itself, Tron (pool derivation). */
export function addressOfSecp256k1Key(protocol: 'evm' | 'tron', evmAddress: string): string {
  return protocol === 'evm' ? evmAddress : tronAddressFromEvm(evmAddress);
}
