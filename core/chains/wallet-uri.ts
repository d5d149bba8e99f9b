import type { Chain, TokenInfo } from './registry';
import { solanaPayReference, solanaPayUri } from './solana/solana-pay';

/**
 * What a payment QR code encodes, per protocol family (design.md §6a):
 * - EVM: an EIP-681 token transfer, `ethereum:<token>@<chain number>/transfer?address=<to>&uint256=<base units>`
 *   (wallets prefill token, network, recipient and amount);
 * - Tron: the bare address (common Tron wallets reject `tron:` URIs; the amount is shown beside it);
 * - Solana: a Solana Pay transfer request with the order's own `reference` (./solana/solana-pay.ts);
 * - anything else: the bare address.
 */
export function walletUri(
  chain: Pick<Chain, 'protocol' | 'evmChainId'>,
  token: Pick<TokenInfo, 'address'>,
  to: string,
  units: bigint,
  order?: { id: string; amount: string; label?: string; message?: string },
): string {
  if (chain.protocol === 'evm' && token.address && chain.evmChainId !== undefined) {
    return `ethereum:${token.address}@${chain.evmChainId}/transfer?address=${to}&uint256=${units.toString()}`;
  }
  if (chain.protocol === 'solana' && token.address && order) {
    return solanaPayUri(to, { amount: order.amount, mint: token.address, reference: solanaPayReference(order.id), label: order.label, message: order.message });
  }
  return to;
}
