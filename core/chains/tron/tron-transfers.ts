import { id as keccakId } from 'ethers';
import type { ChainTransfer } from '../adapter-contract';
import type { Currency } from '../chain';
import { tronFromHex20 } from './tron-address';
import type { TronTransactionInfo } from './tron-http';

/**
 * TRC-20 Transfer events out of `gettransactioninfobyblocknum` answers (issue 17). A pure function
 * of the answer, so it is tested on the documentation's recorded answers.
 * Formats as java-tron writes them with visible=false: in `log[]`, `address` is 20-byte hex with no
 * `41` and no `0x`; topics and data are 64-hex words without `0x`.
 */

/** keccak256("Transfer(address,address,uint256)") without 0x, as topics appear in `log[]`. */
export const TRC20_TRANSFER_TOPIC = keccakId('Transfer(address,address,uint256)').slice(2);

export interface TronToken {
  currency: Currency;
  /** T… form. */
  address: string;
}

export interface TronBlockRef {
  number: number;
  hash: string;
  /** Unix seconds. */
  timestamp: number;
}

/** A ChainTransfer without its chain: the adapter adds the chain id. */
export type TronTransfer = Omit<ChainTransfer, 'chainId'>;

/** A transaction whose execution succeeded: receipt SUCCESS and no top-level FAILED. */
export function succeeded(info: TronTransactionInfo): boolean {
  return info.receipt?.result === 'SUCCESS' && info.result !== 'FAILED';
}

const WORD = /^[0-9a-fA-F]{64}$/;

/**
 * Transfers of the configured tokens in one block's transaction infos.
 * `tokens` is keyed by the token's bare lower-case 20-byte hex (the form of `log[].address`).
 */
export function parseTronTransfers(infos: TronTransactionInfo[], tokens: ReadonlyMap<string, TronToken>, block: TronBlockRef): TronTransfer[] {
  const out: TronTransfer[] = [];
  let blockLogIndex = 0;
  for (const info of infos) {
    const logs = Array.isArray(info.log) ? info.log : [];
    const ok = succeeded(info);
    logs.forEach((log, indexInTx) => {
      const position = blockLogIndex++;
      if (!ok) return;
      const token = tokens.get(String(log.address ?? '').toLowerCase().replace(/^0x/, ''));
      const topics = log.topics ?? [];
      if (!token || topics.length !== 3 || topics[0].toLowerCase() !== TRC20_TRANSFER_TOPIC) return;
      if (!WORD.test(topics[1]) || !WORD.test(topics[2]) || !WORD.test(log.data ?? '')) return;
      out.push({
        txHash: info.id,
        indexInTx,
        blockLogIndex: position,
        currency: token.currency,
        tokenAddress: token.address,
        fromAddress: tronFromHex20(topics[1].slice(24)),
        toAddress: tronFromHex20(topics[2].slice(24)),
        amount: BigInt(`0x${log.data}`),
        blockNumber: block.number,
        blockHash: block.hash,
        blockTimestamp: block.timestamp,
      });
    });
  }
  return out;
}
