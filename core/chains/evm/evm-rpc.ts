import { FetchRequest, JsonRpcProvider, Network } from 'ethers';
import { countRpcCall } from '../../platform/metrics';
import { ProviderUnavailableError, RangeTooLargeError } from '../adapter-contract';
import type { Chain } from '../chain';
import type { Clock } from '../../platform/clock';
import { ProviderPool, type ProviderPoolLogger } from '../provider-pool';

export { RangeTooLargeError };

/**
 * JSON-RPC access to one EVM chain over one or more providers (design.md §3, §10).
 * - ethers providers built as §10 says: static network, no response cache, no batching, so the
 *   scanner never sees a stale head or a stale block (a cache would also hide reorgs).
 * - A failing or rate-limited provider is backed off (exponential, capped) and the next URL used;
 *   when every URL is backed off the call fails and the job retries on its next tick: nothing is
 *   skipped, because the checkpoint only moves after a successful range (core/chains/provider-pool.ts).
 * - Every call is counted (the scan benchmark prints RPC calls per range).
 */

export interface RpcBlockHeader {
  number: number;
  hash: string;
  parentHash: string;
  timestamp: number;
}

export interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  blockNumber: number;
  blockHash: string;
  transactionHash: string;
  logIndex: number;
  removed?: boolean;
  blockTimestamp?: number;
}

/** No provider of the chain answered (the detection core's ProviderUnavailableError). */
export class RpcUnavailableError extends ProviderUnavailableError {
  constructor(chainId: string, cause: unknown) {
    super(chainId, cause);
    this.name = 'RpcUnavailableError';
  }
}

const RANGE_ERROR_PATTERNS = [
  /block range/i,
  /range (is )?too (large|wide|big)/i,
  /more than \d+ (results|logs)/i,
  /query returned more than/i,
  /limit exceeded/i,
  /too many (results|logs|blocks)/i,
  /response size/i,
  /exceed(s|ed)? (the )?(max|maximum)/i,
  /-32005/,
];

export function isRangeError(err: unknown): boolean {
  const text = errorText(err);
  return RANGE_ERROR_PATTERNS.some((re) => re.test(text));
}

function errorText(err: unknown): string {
  if (!err || typeof err !== 'object') return String(err);
  const e = err as { message?: string; error?: { message?: string; code?: number }; info?: unknown; shortMessage?: string };
  return [e.message, e.shortMessage, e.error?.message, e.error?.code, safeJson(e.info)].filter(Boolean).join(' ');
}

function safeJson(v: unknown): string {
  try {
    return v === undefined ? '' : JSON.stringify(v).slice(0, 500);
  } catch {
    return '';
  }
}

export interface EvmRpcOptions {
  timeoutMs?: number;
  /** First back-off after a failure; doubles per consecutive failure up to maxBackoffMs. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** The service context's clock (back-off windows); the system clock when absent. */
  clock?: Clock;
  /** Provider failure and recovery lines. */
  logger?: ProviderPoolLogger;
}

interface Endpoint {
  url: string;
  provider: JsonRpcProvider;
}

export class EvmRpc {
  readonly chainId: string;
  /** Number of JSON-RPC requests sent (benchmarks, tests). */
  calls = 0;
  /** The chain's providers: rotation, back-off, failure lines (core/chains/provider-pool.ts). */
  readonly pool: ProviderPool<Endpoint>;

  constructor(chain: Pick<Chain, 'chainId' | 'rpcUrls' | 'evmChainId'>, options: EvmRpcOptions = {}) {
    this.chainId = chain.chainId;
    const network = Network.from(chain.evmChainId ?? 1);
    const endpoints = chain.rpcUrls.map((url) => {
      const request = new FetchRequest(url);
      request.timeout = options.timeoutMs ?? 10_000;
      const provider = new JsonRpcProvider(request, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1 });
      return { url, target: { url, provider } };
    });
    this.pool = new ProviderPool(endpoints, {
      chainId: chain.chainId,
      family: 'EVM',
      unavailable: (cause) => new RpcUnavailableError(chain.chainId, cause),
      // A refused range is the query's fault, not the provider's.
      classify: (err) => (err instanceof RangeTooLargeError ? { kind: 'request' } : { kind: 'provider' }),
      clock: options.clock,
      logger: options.logger,
      baseBackoffMs: options.baseBackoffMs ?? 500,
      maxBackoffMs: options.maxBackoffMs ?? 5000,
    });
  }

  get urls(): string[] {
    return this.pool.providers.map((p) => p.target.url);
  }

  /**
   * Sends one request, rotating through the providers that are not backed off. A range error is
   * the caller's to handle (it is the query, not the provider) and is thrown at once.
   */
  send<T = unknown>(method: string, params: unknown[]): Promise<T> {
    return this.pool.run(async (ep) => {
      this.calls++;
      try {
        const result = (await ep.provider.send(method, params)) as T;
        countRpcCall(this.chainId, ep.url, true);
        return result;
      } catch (err) {
        // A refused range is a call, not an error.
        countRpcCall(this.chainId, ep.url, isRangeError(err));
        throw isRangeError(err) ? new RangeTooLargeError(errorText(err)) : err;
      }
    }, { method });
  }

  async blockNumber(): Promise<number> {
    return Number(await this.send<string>('eth_blockNumber', []));
  }

  async header(tag: number | 'latest' | 'finalized'): Promise<RpcBlockHeader | null> {
    const raw = await this.send<Record<string, string> | null>('eth_getBlockByNumber', [typeof tag === 'number' ? toHex(tag) : tag, false]);
    if (!raw) return null;
    return { number: Number(raw.number), hash: raw.hash, parentHash: raw.parentHash, timestamp: Number(raw.timestamp) };
  }

  async logs(filter: { fromBlock: number; toBlock: number; addresses: string[]; topic0: string }): Promise<RpcLog[]> {
    const raw = await this.send<Record<string, unknown>[]>('eth_getLogs', [
      { fromBlock: toHex(filter.fromBlock), toBlock: toHex(filter.toBlock), address: filter.addresses, topics: [filter.topic0] },
    ]);
    return raw.map((l) => ({
      address: String(l.address),
      topics: l.topics as string[],
      data: String(l.data),
      blockNumber: Number(l.blockNumber),
      blockHash: String(l.blockHash),
      transactionHash: String(l.transactionHash),
      logIndex: Number(l.logIndex),
      removed: Boolean(l.removed),
      blockTimestamp: l.blockTimestamp !== undefined && l.blockTimestamp !== null ? Number(l.blockTimestamp) : undefined,
    }));
  }

  async call(to: string, data: string): Promise<string> {
    return this.send<string>('eth_call', [{ to, data }, 'latest']);
  }

  destroy(): void {
    for (const p of this.pool.providers) p.target.provider.destroy();
  }
}

export function toHex(n: number): string {
  return `0x${n.toString(16)}`;
}
