import { getAddress, id as keccakId } from 'ethers';
import { UnstableChainError, type AdapterDeps, type HeadSubscription, type HeadSubscriptionState, type BlockRef, type ChainAdapter, type ChainTransfer, type TokenVerdict } from '../adapter-contract';
import type { Chain, Currency } from '../chain';
import { subscribeEvmHeads } from './evm-heads';
import { EvmRpc, RpcUnavailableError, type RpcBlockHeader, type RpcLog } from './evm-rpc';

/**
 * The EVM family's ChainAdapter (core/chains/adapter-contract.ts): JSON-RPC and Transfer-log parsing
 * only. One eth_getLogs per range for the Transfer topic of the configured token contracts,
 * whatever the number of watched addresses (design.md §4).
 */

export const TRANSFER_TOPIC = keccakId('Transfer(address,address,uint256)');
const DECIMALS_SELECTOR = '0x313ce567';

export class EvmAdapter implements ChainAdapter {
  readonly protocol = 'evm' as const;

  constructor(
    readonly chain: Chain,
    readonly rpc: EvmRpc = new EvmRpc(chain),
  ) {}

  /** The chain's RPC client: back-off lines on the process's logger, back-off on its clock. */
  static rpcFor(chain: Chain, { logger, clock }: AdapterDeps): EvmRpc {
    return new EvmRpc(chain, { logger: logger.child({ component: 'evm-rpc' }), clock });
  }

  get calls(): number {
    return this.rpc.calls;
  }

  async head(): Promise<BlockRef> {
    const h = await this.rpc.header('latest');
    if (!h) throw new UnstableChainError(`${this.chain.chainId}: the provider has no latest block`);
    return h;
  }

  async finalizedBlockNumber(head: number): Promise<number | null> {
    const f = this.chain.finality;
    if (f.kind === 'depth') return head - f.blocks + 1;
    if (f.kind === 'finalized-tag') return (await this.rpc.header('finalized'))?.number ?? null;
    return null;
  }

  subscribeHeads(onHead: (height: number, hash: string | null) => void, state: HeadSubscriptionState): HeadSubscription | null {
    return this.chain.wsUrls.length > 0 ? subscribeEvmHeads(this.chain, onHead, state) : null;
  }

  blockAt(height: number): Promise<BlockRef | null> {
    return this.rpc.header(height);
  }

  /** Token contracts of the chain, by lower-case address. */
  private tokens(): Map<string, { currency: Currency; address: string }> {
    const out = new Map<string, { currency: Currency; address: string }>();
    for (const t of Object.values(this.chain.tokens)) if (t?.address) out.set(t.address.toLowerCase(), { currency: t.currency, address: getAddress(t.address) });
    return out;
  }

  async transfersInRange(fromBlock: number, toBlock: number): Promise<ChainTransfer[]> {
    const tokens = this.tokens();
    if (tokens.size === 0) return [];
    const logs = await this.rpc.logs({ fromBlock, toBlock, addresses: [...tokens.values()].map((t) => t.address), topic0: TRANSFER_TOPIC });
    const transferLogs = logs
      .filter((l) => !l.removed && tokens.has(l.address.toLowerCase()) && l.topics.length === 3 && l.topics[0] === TRANSFER_TOPIC)
      .filter((l) => l.blockNumber >= fromBlock && l.blockNumber <= toBlock)
      .sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
    // Index within the transaction: position among the configured tokens' Transfer logs of that
    // transaction, ordered by block log index. A transaction lies in one block, so the whole
    // transaction is in this answer.
    const perTx = new Map<string, number>();
    const times = await this.blockTimes(transferLogs);
    return transferLogs.map((log) => {
      const key = log.transactionHash.toLowerCase();
      const indexInTx = perTx.get(key) ?? 0;
      perTx.set(key, indexInTx + 1);
      const token = tokens.get(log.address.toLowerCase())!;
      return {
        chainId: this.chain.chainId,
        txHash: log.transactionHash,
        indexInTx,
        blockLogIndex: log.logIndex,
        currency: token.currency,
        tokenAddress: token.address,
        fromAddress: getAddress(`0x${log.topics[1].slice(26)}`),
        toAddress: getAddress(`0x${log.topics[2].slice(26)}`),
        amount: log.data === '0x' ? 0n : BigInt(log.data),
        blockNumber: log.blockNumber,
        blockHash: log.blockHash,
        blockTimestamp: times.get(log.blockNumber)!,
      };
    });
  }

  /**
   * Block times: from the log when the node gives it (blockTimestamp, as anvil, reth and
   * geth ≥ 1.16 do), else from the block header, whose hash must match the log's.
   */
  private async blockTimes(logs: RpcLog[]): Promise<Map<number, number>> {
    const times = new Map<number, number>();
    const headers = new Map<number, RpcBlockHeader>();
    for (const log of logs) {
      if (times.has(log.blockNumber)) continue;
      if (log.blockTimestamp !== undefined) {
        times.set(log.blockNumber, log.blockTimestamp);
        continue;
      }
      const h = await this.rpc.header(log.blockNumber);
      if (!h || h.hash !== log.blockHash) throw new UnstableChainError(`${this.chain.chainId}: block ${log.blockNumber} changed while its logs were read`);
      headers.set(log.blockNumber, h);
      times.set(log.blockNumber, h.timestamp);
    }
    for (const log of logs) {
      const h = headers.get(log.blockNumber);
      if (h && h.hash !== log.blockHash) throw new UnstableChainError(`${this.chain.chainId}: block ${log.blockNumber} changed while its logs were read`);
    }
    return times;
  }

  /** decimals() of every configured token against the registry (design.md §4a). */
  async verifyTokens(): Promise<TokenVerdict> {
    const problems: string[] = [];
    for (const token of Object.values(this.chain.tokens)) {
      if (!token?.address) continue;
      let onChain: number | null = null;
      let failure = '';
      try {
        const raw = await this.rpc.call(token.address, DECIMALS_SELECTOR);
        onChain = raw && raw !== '0x' ? Number(BigInt(raw)) : null;
      } catch (err) {
        if (err instanceof RpcUnavailableError) throw err; // provider down: check again later
        // The contract answered with an error (reverted, no such function): a verdict, with its reason.
        failure = ` (decimals() failed: ${(err as Error).message})`;
      }
      if (onChain !== token.decimals) {
        problems.push(`${token.currency} at ${token.address} reports decimals ${onChain ?? 'none'}${failure}, the registry expects ${token.decimals}`);
      }
    }
    return { ok: problems.length === 0, problems };
  }
}
