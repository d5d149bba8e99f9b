import { getAddress } from 'ethers';
import type { AddressCheck } from '../chain';

const EVM_RE = /^0x[0-9a-fA-F]{40}$/;

/** An EVM address, normalised to its EIP-55 checksum form. */
export function checkEvmAddress(text: string): AddressCheck {
  if (!EVM_RE.test(text)) return { ok: false, error: 'not an EVM address: expected 0x followed by 40 hexadecimal characters' };
  try {
    return { ok: true, address: getAddress(text) };
  } catch {
    return { ok: false, error: 'invalid EVM checksum: mixed-case address whose capitalisation does not match its EIP-55 checksum' };
  }
}
