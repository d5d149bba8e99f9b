import type { Clock } from '../../platform/clock';
import { ProviderPool, type ProviderPoolLogger } from '../provider-pool';

/**
 * HTTP access to one Tron chain (java-tron full node / TronGrid HTTP API) over one or more
 * providers (design.md §3, issue 17).
 * - Two views of the chain: the full node (`/wallet/*`, newest blocks, not final) and the
 *   solidified one (`/walletsolidity/*`, final).
 * - The TronGrid API key travels only in the `TRON-PRO-API-KEY` header; log lines name a provider
 *   by its origin (scheme, host, port), never its path, query or headers, which may carry a key.
 * - 403 and 429 back the provider off for about 30 s (TronGrid penalises bursts for that long);
 *   other failures back off exponentially (capped); the next provider is used meanwhile. When all
 *   are backed off the call fails with TronUnavailableError and the job tries again on its next
 *   tick: nothing is skipped, the checkpoint only moves past blocks that were read.
 * - A per-provider limiter bounds requests in flight and requests per second, so several blocks
 *   can be fetched in parallel without tripping a provider's rate limit.
 * Rotation, back-off, the budget and the failure lines are the provider pool's
 * (core/chains/provider-pool.ts); this file keeps Tron's HTTP shapes.
 */

/** The part of a pino logger the client uses. */
export type TronHttpLogger = ProviderPoolLogger;

export class TronUnavailableError extends Error {
  constructor(chainId: string, cause: unknown) {
    super(`No Tron provider of ${chainId} answered: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'TronUnavailableError';
  }
}

/** A provider answered with an HTTP status or an `{"Error": …}` body. */
export class TronHttpError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'TronHttpError';
  }
}

/** Block as the HTTP API gives it (protocol.Block, `visible` false). */
export interface TronBlock {
  blockID: string;
  block_header: { raw_data: { number: number; parentHash: string; timestamp: number; txTrieRoot?: string; witness_address?: string; version?: number } };
  transactions?: unknown[];
}

export interface TronLog {
  address: string;
  topics?: string[];
  data?: string;
}

/** protocol.TransactionInfo as the HTTP API gives it. */
export interface TronTransactionInfo {
  id: string;
  blockNumber?: number;
  blockTimeStamp?: number;
  contract_address?: string;
  receipt?: { result?: string; [k: string]: unknown };
  log?: TronLog[];
  result?: string;
  resMessage?: string;
  [k: string]: unknown;
}

export interface TronHttpOptions {
  apiKey?: string;
  timeoutMs?: number;
  /** Back-off after a 403/429 (TronGrid's penalty window). */
  rateLimitBackoffMs?: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Requests in flight per provider. */
  maxConcurrent?: number;
  /** Requests started per second per provider (0: unlimited). */
  requestsPerSecond?: number;
  logger?: TronHttpLogger;
  /** The service context's clock (back-off windows, request spacing); the system clock when absent. */
  clock?: Clock;
}

export class TronHttp {
  /** HTTP requests sent (benchmarks, tests). */
  calls = 0;
  /** The chain's providers (base URLs without a trailing slash): rotation, back-off, budget. */
  readonly pool: ProviderPool<string>;
  private readonly timeoutMs: number;

  constructor(
    readonly chainId: string,
    urls: string[],
    private readonly options: TronHttpOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.pool = new ProviderPool(
      urls.map((url) => ({ url, target: url.replace(/\/+$/, '') })),
      {
        chainId,
        family: 'Tron',
        unavailable: (cause) => new TronUnavailableError(chainId, cause),
        classify: (err) => {
          const status = err instanceof TronHttpError ? err.status : 0;
          return status === 403 || status === 429 ? { kind: 'rate-limited', status } : { kind: 'provider', status };
        },
        clock: options.clock,
        logger: options.logger,
        rateLimitBackoffMs: options.rateLimitBackoffMs ?? 30_000,
        baseBackoffMs: options.baseBackoffMs ?? 500,
        maxBackoffMs: options.maxBackoffMs ?? 10_000,
        maxConcurrent: options.maxConcurrent ?? 8,
        requestsPerSecond: options.requestsPerSecond ?? (options.apiKey ? 15 : 0),
      },
    );
  }

  get origins(): string[] {
    return this.pool.origins;
  }

  /** POSTs a JSON body to a path, rotating through providers that are not backed off. */
  post<T>(path: string, body: Record<string, unknown> = {}): Promise<T> {
    return this.pool.run((url, origin) => this.request<T>(url, origin, path, body), { path });
  }

  private async request<T>(url: string, origin: string, path: string, body: Record<string, unknown>): Promise<T> {
    this.calls++;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.options.apiKey) headers['TRON-PRO-API-KEY'] = this.options.apiKey;
    let res: Response;
    try {
      res = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      // fetch errors name the URL; ours carry only the origin.
      throw new TronHttpError(`${origin}${path}: ${err instanceof Error && err.name === 'TimeoutError' ? 'timed out' : 'unreachable'}`, 0);
    }
    const text = await res.text();
    if (!res.ok) throw new TronHttpError(`${origin}${path}: HTTP ${res.status}`, res.status);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new TronHttpError(`${origin}${path}: answer is not JSON`, res.status);
    }
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed) && 'Error' in parsed) {
      throw new TronHttpError(`${origin}${path}: ${String((parsed as { Error: unknown }).Error).slice(0, 200)}`, res.status);
    }
    return parsed as T;
  }

  // --- endpoints -------------------------------------------------------------------------

  /** Newest block: full node (`/wallet`) or solidified (`/walletsolidity`). */
  async nowBlock(view: TronView): Promise<TronBlock | null> {
    return asBlock(await this.post<unknown>(`/${view}/getnowblock`));
  }

  async blockByNum(view: TronView, num: number): Promise<TronBlock | null> {
    return asBlock(await this.post<unknown>(`/${view}/getblockbynum`, { num }));
  }

  /**
   * The blocks startNum..endNum − 1 in one request (`getblockbylimitnext`, at most
   * BLOCKS_PER_RANGE_REQUEST of them), as answered: `{}` (none available) gives none. A node
   * answers the blocks it has, so callers check that every height asked for is there.
   */
  async blocksByRange(view: TronView, startNum: number, endNum: number): Promise<TronBlock[]> {
    if (endNum - startNum > BLOCKS_PER_RANGE_REQUEST) throw new Error(`getblockbylimitnext takes at most ${BLOCKS_PER_RANGE_REQUEST} blocks`);
    const answer = await this.post<unknown>(`/${view}/getblockbylimitnext`, { startNum, endNum });
    if (answer && typeof answer === 'object' && !Array.isArray(answer)) {
      const list = (answer as { block?: unknown }).block;
      if (list === undefined && Object.keys(answer).length === 0) return [];
      if (Array.isArray(list)) return list.map(asBlock).filter((b): b is TronBlock => b !== null);
    }
    throw new TronHttpError(`/${view}/getblockbylimitnext answered neither a block list nor {}`, 200);
  }

  /**
   * Transaction infos of a block as answered: `[]` or `{}` give no infos. `{}` is also the answer of a
   * node that does not have the block, so callers check the infos against the block itself.
   */
  async transactionInfoByBlockNum(view: TronView, num: number): Promise<TronTransactionInfo[]> {
    const answer = await this.post<unknown>(`/${view}/gettransactioninfobyblocknum`, { num });
    if (Array.isArray(answer)) return answer as TronTransactionInfo[];
    if (answer && typeof answer === 'object' && Object.keys(answer).length === 0) return [];
    throw new TronHttpError(`/${view}/gettransactioninfobyblocknum answered neither a list nor {}`, 200);
  }

  /** Several blocks' transaction infos at once (the per-provider limiter bounds the burst). */
  transactionInfoByBlockNums(view: TronView, nums: number[]): Promise<TronTransactionInfo[][]> {
    return Promise.all(nums.map((n) => this.transactionInfoByBlockNum(view, n)));
  }

  /** A read-only contract call (`/wallet/triggerconstantcontract`); returns constant_result[0]. */
  async constantCall(contractHex41: string, functionSelector: string, ownerHex41 = '410000000000000000000000000000000000000000'): Promise<string | null> {
    const answer = await this.post<{ result?: { result?: boolean; message?: string; code?: string }; constant_result?: string[]; transaction?: { ret?: { ret?: string }[] } }>(
      '/wallet/triggerconstantcontract',
      { owner_address: ownerHex41, contract_address: contractHex41, function_selector: functionSelector, parameter: '' },
    );
    if (!answer.result?.result || answer.transaction?.ret?.[0]?.ret === 'FAILED') return null;
    return answer.constant_result?.[0] ?? null;
  }
}

export type TronView = 'wallet' | 'walletsolidity';

/** java-tron's limit on one `getblockbylimitnext` request (GetBlockByLimitNextServlet BLOCK_LIMIT_NUM). */
export const BLOCKS_PER_RANGE_REQUEST = 100;

function asBlock(answer: unknown): TronBlock | null {
  if (!answer || typeof answer !== 'object' || !('blockID' in answer)) return null;
  return answer as TronBlock;
}
