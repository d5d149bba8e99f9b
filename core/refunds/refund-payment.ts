import { Interface } from 'ethers';
import type { ChainRegistry } from '../chains/registry';
import { walletUri } from '../chains/wallet-uri';
import { solanaPayReference, solanaPayUri } from '../chains/solana/solana-pay';
import { formatAmount } from '../platform/amounts';

/**
 * What the merchant's own wallet needs to pay an approved refund (issue 42; Stablegate never signs):
 * a standard payment URI for the exact amount to the destination, or, for many at once, an
 * unsigned batch file.
 */
export interface RefundPayment {
  id: string;
  amount: bigint;
  currency: string;
  chainId: string;
  protocol: string;
  tokenAddress: string;
}

/**
 * - EVM: EIP-681 with the chain id (core/chains/wallet-uri.ts, the payment page's own form);
 * - Tron: `tron:<to>?token=<contract>&amount=<decimal>` (TronLink's deep-link fields; no standard exists);
 * - Solana: a Solana Pay transfer request whose reference is derived from the refund id, so the
 *   payment can be found by it.
 */
export function refundPaymentUri(registry: ChainRegistry, r: RefundPayment, to: string): string {
  const decimals = registry.tokenDecimals(r.chainId, r.currency);
  if (r.protocol === 'tron') {
    return `tron:${to}?${new URLSearchParams({ token: r.tokenAddress, amount: formatAmount(r.amount, decimals) }).toString()}`;
  }
  if (r.protocol === 'solana') {
    return solanaPayUri(to, { amount: formatAmount(r.amount, decimals), mint: r.tokenAddress, reference: solanaPayReference(r.id), label: 'Refund' });
  }
  const chain = registry.get(r.chainId);
  return walletUri({ protocol: 'evm', evmChainId: chain?.evmChainId }, { address: r.tokenAddress }, to, r.amount);
}

const ERC20 = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);

/** The calldata of an ERC-20 transfer of `amount` base units to `to`. */
export function erc20TransferData(to: string, amount: bigint): string {
  return ERC20.encodeFunctionData('transfer', [to, amount]);
}

/** One transaction of a Safe Transaction Builder batch. */
export interface SafeTransaction {
  to: string;
  value: '0';
  data: string;
  contractMethod: null;
  contractInputsValues: null;
}

/**
 * A Safe Transaction Builder batch (the JSON its "Load" accepts) of one EVM chain: one ERC-20
 * transfer call per refund, unsigned; the Safe's owners sign it in their own wallet.
 */
export function safeTransactionBatch(evmChainId: number, createdAt: Date, name: string, items: { tokenAddress: string; destination: string; amount: bigint; id: string }[]) {
  return {
    version: '1.0',
    chainId: String(evmChainId),
    createdAt: createdAt.getTime(),
    meta: {
      name,
      description: `Stablegate: ${items.length} approved refund(s): ${items.map((i) => i.id).join(', ')}`,
      txBuilderVersion: '1.16.5',
      createdFromSafeAddress: '',
      createdFromOwnerAddress: '',
      checksum: '',
    },
    transactions: items.map(
      (i): SafeTransaction => ({ to: i.tokenAddress, value: '0', data: erc20TransferData(i.destination, i.amount), contractMethod: null, contractInputsValues: null }),
    ),
  };
}
