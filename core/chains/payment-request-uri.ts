import type { ChainRegistry } from './registry';
import { walletUri } from './wallet-uri';
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
 * A standard payment URI for the exact amount to `to` (a refund or payout the merchant pays from
 * its own wallet, issue 42): the payment page's own form (./wallet-uri.ts builds every family's URI:
 * EIP-681 with the chain id, `tron:<to>?token=<contract>&amount=<decimal>`, Solana Pay whose
 * reference is derived from the request's id, so the payment can be found by it).
 */
export function paymentRequestUri(registry: ChainRegistry, r: PaymentRequest, to: string, label = 'Refund'): string {
  const amount = formatAmount(r.amount, registry.tokenDecimals(r.chainId, r.currency));
  const chain = { protocol: r.protocol, evmChainId: r.protocol === 'evm' ? registry.get(r.chainId)?.evmChainId : undefined };
  return walletUri(chain, { address: r.tokenAddress }, to, { units: r.amount, amount, id: r.id, label });
}
