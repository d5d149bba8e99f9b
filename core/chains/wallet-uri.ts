import type { Chain, TokenInfo } from './registry';
import { solanaPayReference, solanaPayUri } from './solana/solana-pay';

/** A payment a wallet is asked to make: one amount in two forms, and what seeds Solana Pay's reference. */
export interface WalletRequest {
  /** The amount in the token's base units (EIP-681's `uint256`). */
  units: bigint;
  /** The same amount as a decimal in whole tokens (Tron's `amount`, Solana Pay's `amount`). */
  amount: string;
  /** The order's (or refund's, payout's) id: Solana Pay's `reference` is derived from it. */
  id: string;
  label?: string;
  message?: string;
}

/**
 * The one builder of the payment URI a wallet reads, per protocol family (design.md §6a): the payment
 * page's QR code and "open in wallet" link, and a refund's or payout's `paymentUri`
 * (./payment-request-uri.ts) all come from here.
 * - EVM: an EIP-681 token transfer, `ethereum:<token>@<chain number>/transfer?address=<to>&uint256=<base units>`
 *   (wallets prefill token, network, recipient and amount);
 * - Tron: `tron:<to>?token=<TRC-20 contract>&amount=<decimal>`. Tron has no standard payment URI;
 *   these are the fields of the `tron:` request that Tron wallets which read one take (recipient,
 *   token contract, amount in whole tokens). A wallet that reads only a bare address does not, so the
 *   payment page keeps the address and the amount shown beside the QR, each with a copy button;
 * - Solana: a Solana Pay transfer request with a `reference` derived from the request's id (./solana/solana-pay.ts);
 * - anything else, or a token without a contract: the bare address.
 */
export function walletUri(
  chain: { protocol: string; evmChainId?: Chain['evmChainId'] },
  token: Pick<TokenInfo, 'address'>,
  to: string,
  request: WalletRequest,
): string {
  if (!token.address) return to;
  if (chain.protocol === 'evm' && chain.evmChainId !== undefined) {
    return `ethereum:${token.address}@${chain.evmChainId}/transfer?address=${to}&uint256=${request.units.toString()}`;
  }
  if (chain.protocol === 'tron') {
    return `tron:${to}?${new URLSearchParams({ token: token.address, amount: request.amount }).toString()}`;
  }
  if (chain.protocol === 'solana') {
    return solanaPayUri(to, { amount: request.amount, mint: token.address, reference: solanaPayReference(request.id), label: request.label, message: request.message });
  }
  return to;
}
