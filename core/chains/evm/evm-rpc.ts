import { FetchRequest, JsonRpcProvider, Network } from 'ethers';
import { countRpcCall } from '../../platform/metrics';
import { ProviderUnavailableError, RangeTooLargeError } from '../adapter-contract';
import type { Chain } from '../chain';

export { RangeTooLargeError };

/**
 * JSON-RPC access to one EVM chain over one or more providers (design.md §3, §10).
 * - ethers providers built as §10 says: static network, no response cache, no batching, so the
 *   scanner never sees a stale head or a stale block (a cache would also hide reorgs).
 * - A failing or rate-limited provider is backed off (exponential, capped) and the next URL used;
 *   when every URL is backed off the call fails and the job retries on its next tick: nothing is
 *   skipped, because the checkpoint only moves after a successful range.
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

interface Endpoint {
  url: string;
  provider: JsonRpcProvider;
  failures: number;
  downUntil: number;
}

export interface EvmRpcOptions {
  timeoutMs?: number;
  /** First back-off after a failure; doubles per consecutive failure up to maxBackoffMs. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
}

export class EvmRpc {
  readonly chainId: string;
  /** Number of JSON-RPC requests sent (benchmarks, tests). */
  calls = 0;
  private readonly endpoints: Endpoint[];
  private current = 0;
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;

  constructor(chain: Pick<Chain, 'chainId' | 'rpcUrls' | 'evmChainId'>, options: EvmRpcOptions = {}) {
    if (chain.rpcUrls.length === 0) throw new Error(`Chain ${chain.chainId} has no RPC URL`);
    this.chainId = chain.chainId;
    this.baseBackoffMs = options.baseBackoffMs ?? 500;
    this.maxBackoffMs = options.maxBackoffMs ?? 5000;
    const network = Network.from(chain.evmChainId ?? 1);
    this.endpoints = chain.rpcUrls.map((url) => {
      const request = new FetchRequest(url);
      request.timeout = options.timeoutMs ?? 10_000;
      const provider = new JsonRpcProvider(request, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1 });
      return { url, provider, failures: 0, downUntil: 0 };
    });
  }

  get urls(): string[] {
    return this.endpoints.map((e) => e.url);
  }

  /**
   * Sends one request, rotating through the providers that are not backed off. A range error is
   * the caller's to handle (it is the query, not the provider) and is thrown at once.
   */
  async send<T = unknown>(method: string, params: unknown[]): Promise<T> {
    let lastError: unknown = null;
    const n = this.endpoints.length;
    const start = this.current;
    for (let attempt = 0; attempt < n; attempt++) {
      const index = (start + attempt) % n;
      const ep = this.endpoints[index];
      if (ep.downUntil > Date.now() && attempt < n - 1) continue;
      if (ep.downUntil > Date.now()) {
        // Every provider is backed off: fail this call, the job retries on its next tick.
        throw new RpcUnavailableError(this.chainId, lastError ?? new Error(`backed off until ${new Date(ep.downUntil).toISOString()}`));
      }
      try {
        this.calls++;
        const result = (await ep.provider.send(method, params)) as T;
        countRpcCall(this.chainId, ep.url, true);
        ep.failures = 0;
        this.current = index;
        return result;
      } catch (err) {
        // A refused range is the query's fault, not the provider's: a call, not an error.
        countRpcCall(this.chainId, ep.url, isRangeError(err));
        if (isRangeError(err)) throw new RangeTooLargeError(errorText(err));
        lastError = err;
        ep.failures++;
        ep.downUntil = Date.now() + Math.min(this.maxBackoffMs, this.baseBackoffMs * 2 ** (ep.failures - 1));
        this.current = (index + 1) % n;
      }
    }
    throw new RpcUnavailableError(this.chainId, lastError);
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
    for (const ep of this.endpoints) ep.provider.destroy();
  }
}

export function toHex(n: number): string {
  return `0x${n.toString(16)}`;
}
