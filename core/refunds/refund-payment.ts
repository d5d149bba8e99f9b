import { Interface } from 'ethers';

/**
 * Many approved refunds paid at once from the merchant's own wallet (issue 42; Stablegate never
 * signs): the unsigned batch files common wallets import. One refund's payment URI is
 * core/chains/payment-request-uri.ts.
 */

const ERC20: Readonly<Interface> = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);

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
      description: `Stablegate: ${items.length} approved refund(s) and payout(s): ${items.map((i) => i.id).join(', ')}`,
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
