import { concat, decodeBase58, encodeBase58, getBytes, id as keccakId, sha256, toBeHex, type JsonRpcProvider } from 'ethers';
import { indexesInTx, transferIdentity } from './rules';
import type { Family } from './scenario';

/**
 * A chain's final canonical history as the invariants and the reference model read it: every
 * token transfer of the configured tokens since the run began, read from the chain itself (not
 * through the service's adapters, so a parsing bug there shows as a difference). One reader per
 * family; the result is read once and kept, so the invariants and the model see the same history.
 */
export interface CanonicalTransfer {
  chainId: string;
  identity: string;
  /** Recipient, lower-cased (EVM hex; Tron base58 lower-cased: only compared, never decoded). */
  to: string;
  currency: string;
  amount: bigint;
  blockNumber: number;
  /** The block's timestamp in whole seconds, in ms. */
  blockTimeMs: number;
}

export interface ChainHistory {
  family: Family;
  chainId: string;
  /** The chain's head now. */
  head(): Promise<number>;
  /** Canonical transfers from the start block to the head (read on the first call, then kept). */
  transfers(): Promise<CanonicalTransfer[]>;
}

const once = <T>(fn: () => Promise<T>): (() => Promise<T>) => {
  let p: Promise<T> | null = null;
  return () => (p ??= fn());
};

const TRANSFER_TOPIC = keccakId('Transfer(address,address,uint256)');

/** anvil (ethereum-local): eth_getLogs of the token contracts' Transfer events. */
export function evmHistory(chain: JsonRpcProvider, chainId: string, tokens: Record<string, string>, startBlock: number): ChainHistory {
  const currencyOf = new Map(Object.entries(tokens).map(([c, a]) => [a.toLowerCase(), c]));
  return {
    family: 'evm',
    chainId,
    head: async () => Number(await chain.send('eth_blockNumber', [])),
    transfers: once(async () => {
      const logs = (await chain.send('eth_getLogs', [
        { fromBlock: `0x${startBlock.toString(16)}`, toBlock: 'latest', address: Object.values(tokens), topics: [TRANSFER_TOPIC] },
      ])) as { transactionHash: string; logIndex: string; topics: string[]; data: string; address: string; blockNumber: string }[];
      const blockTimes = new Map<string, number>();
      for (const n of new Set(logs.map((l) => l.blockNumber))) {
        const b = (await chain.send('eth_getBlockByNumber', [n, false])) as { timestamp: string };
        blockTimes.set(n, Number(b.timestamp) * 1000);
      }
      const indexes = indexesInTx(logs);
      return logs.map((l) => ({
        chainId,
        identity: transferIdentity({ txHash: l.transactionHash, indexInTx: indexes.get(l)! }),
        to: `0x${l.topics[2].slice(26)}`.toLowerCase(),
        currency: currencyOf.get(l.address.toLowerCase()) ?? '?',
        amount: BigInt(l.data),
        blockNumber: Number(l.blockNumber),
        blockTimeMs: blockTimes.get(l.blockNumber)!,
      }));
    }),
  };
}

/** Tron's base58check form of a 20-byte account (0x41 prefix), written out here rather than taken from core/. */
export function tronBase58(hex20: string): string {
  const body = getBytes(`0x41${hex20.replace(/^0x/, '').toLowerCase()}`);
  const check = getBytes(sha256(sha256(body))).slice(0, 4);
  return encodeBase58(concat([body, check]));
}

/** The 20-byte account of a T… address (hex, no prefix). */
export function tronHex20(address: string): string {
  return toBeHex(decodeBase58(address), 25).slice(4, 44);
}

interface TronBlockJson {
  blockID?: string;
  block_header?: { raw_data: { number?: number; timestamp?: number } };
}
interface TronInfoJson {
  id: string;
  log?: { address: string; topics: string[]; data: string }[];
}

/**
 * tron-local: the full node's blocks (`/wallet/getblockbynum`) and their transaction infos; a
 * transfer is a TRC-20 Transfer log of the token contract, its index the position among those logs
 * in its transaction.
 */
export function tronHistory(url: string, chainId: string, tokens: Record<string, string>, startBlock: number): ChainHistory {
  const currencyOf = new Map(Object.entries(tokens).map(([c, a]) => [tronHex20(a), c]));
  const post = async <T>(path: string, body: Record<string, unknown> = {}): Promise<T> => {
    const res = await fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) });
    const answer = (await res.json()) as T & { Error?: string };
    if (!res.ok || (answer && typeof answer === 'object' && 'Error' in answer)) throw new Error(`tron-local ${path}: ${res.status} ${JSON.stringify(answer).slice(0, 200)}`);
    return answer;
  };
  const head = async () => (await post<TronBlockJson>('/wallet/getnowblock')).block_header?.raw_data.number ?? 0;
  return {
    family: 'tron',
    chainId,
    head,
    transfers: once(async () => {
      const out: CanonicalTransfer[] = [];
      const top = await head();
      for (let n = startBlock; n <= top; n++) {
        const block = await post<TronBlockJson>('/wallet/getblockbynum', { num: n });
        const infos = await post<TronInfoJson[] | Record<string, never>>('/wallet/gettransactioninfobyblocknum', { num: n });
        if (!Array.isArray(infos)) continue;
        const timestamp = block.block_header?.raw_data.timestamp ?? 0;
        for (const info of infos) {
          let index = 0;
          for (const l of info.log ?? []) {
            const currency = currencyOf.get(l.address.toLowerCase());
            if (!currency || l.topics[0]?.toLowerCase() !== TRANSFER_TOPIC.slice(2)) continue;
            out.push({
              chainId,
              identity: transferIdentity({ txHash: info.id, indexInTx: index++ }),
              to: tronBase58(l.topics[2].slice(24)).toLowerCase(),
              currency,
              amount: BigInt(`0x${l.data}`),
              blockNumber: n,
              blockTimeMs: Math.floor(timestamp / 1000) * 1000,
            });
          }
        }
      }
      return out;
    }),
  };
}

/**
 * solana-local: its blocks on the current fork, read from the node itself (in process), not through
 * the adapter: a transfer is an increase of a configured mint's token account in a successful
 * transaction (post − pre of the recorded token balances), identified by the account's index in
 * the transaction's account list, its recipient the account's owner.
 */
export function solanaHistory(node: SolanaNodeView, chainId: string, mints: Record<string, string>, startSlot: number): ChainHistory {
  const currencyOf = new Map(Object.entries(mints).map(([c, m]) => [m, c]));
  return {
    family: 'solana',
    chainId,
    head: async () => node.blockAtCommitment('confirmed').slot,
    transfers: once(async () => {
      const out: CanonicalTransfer[] = [];
      const top = node.blockAtCommitment('confirmed').slot;
      for (const block of node.blocksBetween(startSlot + 1, top)) {
        for (const tx of block.txs) {
          if (tx.err !== null) continue;
          for (const post of tx.postTokenBalances) {
            const currency = currencyOf.get(post.mint);
            if (!currency || !post.owner) continue;
            const pre = tx.preTokenBalances.find((b) => b.accountIndex === post.accountIndex && b.mint === post.mint);
            const amount = BigInt(post.uiTokenAmount.amount) - BigInt(pre?.uiTokenAmount.amount ?? '0');
            if (amount <= 0n) continue;
            out.push({
              chainId,
              identity: transferIdentity({ txHash: tx.signature, indexInTx: post.accountIndex }),
              to: post.owner.toLowerCase(),
              currency,
              amount,
              blockNumber: block.slot,
              blockTimeMs: block.blockTime * 1000,
            });
          }
        }
      }
      return out;
    }),
  };
}

/** What solanaHistory reads of the in-process node. */
export interface SolanaNodeView {
  blockAtCommitment(commitment: 'confirmed'): { slot: number };
  blocksBetween(from: number, to: number): {
    slot: number;
    blockTime: number;
    txs: { signature: string; err: unknown; preTokenBalances: SolanaBalance[]; postTokenBalances: SolanaBalance[] }[];
  }[];
}
interface SolanaBalance {
  accountIndex: number;
  mint: string;
  owner?: string;
  uiTokenAmount: { amount: string };
}
