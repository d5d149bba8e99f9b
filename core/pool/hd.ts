import { HDNodeWallet } from 'ethers';
import { addressOfSecp256k1Key } from '../chains/addresses';

/**
 * Watch-only derivation from an extended public key (BIP32, non-hardened `0/i` below it). EVM and
 * Tron share secp256k1: the Tron address is base58check(0x41 ‖ the EVM address). Solana keys are
 * ed25519 with hardened derivation only, so they cannot be derived from a public key.
 */
export type DerivableProtocol = 'evm' | 'tron';

/** Largest non-hardened child index. */
export const MAX_DERIVATION_INDEX = 0x7fffffff;

export class ExtendedKeyError extends Error {}

/** Derives addresses of one xpub; the `0` (receive) branch is computed once. */
export class XpubDeriver {
  private readonly receive: HDNodeWallet;

  constructor(readonly masterPublicKey: string) {
    let node: HDNodeWallet;
    try {
      node = HDNodeWallet.fromExtendedKey(masterPublicKey) as HDNodeWallet;
    } catch {
      throw new ExtendedKeyError('not a valid extended public key (xpub)');
    }
    if ((node as { privateKey?: string }).privateKey) {
      // Never reached for input screened by secret-scan, but never derive from a private key.
      throw new ExtendedKeyError('an extended private key is not accepted');
    }
    this.receive = node.deriveChild(0);
  }

  evmAddress(index: number): string {
    return this.receive.deriveChild(index).address;
  }

  address(protocol: DerivableProtocol, index: number): string {
    return addressOfSecp256k1Key(protocol, this.evmAddress(index));
  }
}

/** Parses once per distinct xpub in an import (an import usually has one). */
export class DeriverCache {
  private readonly cache = new Map<string, XpubDeriver | ExtendedKeyError>();

  get(masterPublicKey: string): XpubDeriver | ExtendedKeyError {
    let d = this.cache.get(masterPublicKey);
    if (!d) {
      try {
        d = new XpubDeriver(masterPublicKey);
      } catch (err) {
        d = err instanceof ExtendedKeyError ? err : new ExtendedKeyError('not a valid extended public key (xpub)');
      }
      this.cache.set(masterPublicKey, d);
    }
    return d;
  }
}
