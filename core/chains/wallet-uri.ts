import type { Chain, TokenInfo } from './registry';

/**
 * What a payment QR code encodes, per protocol family (design.md §6a):
 * - EVM: an EIP-681 token transfer, `ethereum:<token>@<chain number>/transfer?address=<to>&uint256=<base units>`
 *   (wallets prefill token, network, recipient and amount);
 * - Tron: the bare address (common Tron wallets reject `tron:` URIs; the amount is shown beside it);
 * - anything else: the bare address.
 */
export function walletUri(chain: Pick<Chain, 'protocol' | 'evmChainId'>, token: Pick<TokenInfo, 'address'>, to: string, units: bigint): string {
  if (chain.protocol === 'evm' && token.address && chain.evmChainId !== undefined) {
    return `ethereum:${token.address}@${chain.evmChainId}/transfer?address=${to}&uint256=${units.toString()}`;
  }
  return to;
}
