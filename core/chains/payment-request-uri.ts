import type { ChainRegistry } from './registry';
import { walletUri } from './wallet-uri';
import { solanaPayReference, solanaPayUri } from './solana/solana-pay';
import { formatAmount } from '../platform/amounts';

/** An outgoing payment a wallet is asked to make: a token amount (base units) on a chain; `id` seeds Solana Pay's reference. */
export interface PaymentRequest {
  id: string;
  amount: bigint;
  currency: string;
  chainId: string;
  protocol: string;
  tokenAddress: string;
}

/**
 * A standard payment URI for the exact amount to `to` (a refund the merchant pays from its own
 * wallet, issue 42):
 * - EVM: EIP-681 with the chain id (./wallet-uri.ts, the payment page's own form);
 * - Tron: `tron:<to>?token=<contract>&amount=<decimal>` (TronLink's deep-link fields; no standard exists);
 * - Solana: a Solana Pay transfer request whose reference is derived from the request's id, so the
 *   payment can be found by it.
 */
export function paymentRequestUri(registry: ChainRegistry, r: PaymentRequest, to: string, label = 'Refund'): string {
  const decimals = registry.tokenDecimals(r.chainId, r.currency);
  if (r.protocol === 'tron') {
    return `tron:${to}?${new URLSearchParams({ token: r.tokenAddress, amount: formatAmount(r.amount, decimals) }).toString()}`;
  }
  if (r.protocol === 'solana') {
    return solanaPayUri(to, { amount: formatAmount(r.amount, decimals), mint: r.tokenAddress, reference: solanaPayReference(r.id), label });
  }
  const chain = registry.get(r.chainId);
  return walletUri({ protocol: 'evm', evmChainId: chain?.evmChainId }, { address: r.tokenAddress }, to, r.amount);
}
