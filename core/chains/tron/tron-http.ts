import { urlOrigin } from '../../platform/provider-urls';
import { RequestLimiter } from '../request-limiter';

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
 */

/** The part of a pino logger the client uses. */
export interface TronHttpLogger {
  warn(fields: object, message: string): void;
}

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
}

interface Provider {
  url: string;
  origin: string;
  limiter: RequestLimiter;
  failures: number;
  downUntil: number;
}

export class TronHttp {
  /** HTTP requests sent (benchmarks, tests). */
  calls = 0;
  private readonly providers: Provider[];
  private current = 0;
  private readonly opts: Required<Omit<TronHttpOptions, 'apiKey' | 'logger'>>;

  constructor(
    readonly chainId: string,
    urls: string[],
    private readonly options: TronHttpOptions = {},
  ) {
    if (urls.length === 0) throw new Error(`Chain ${chainId} has no RPC URL`);
    this.opts = {
      timeoutMs: options.timeoutMs ?? 10_000,
      rateLimitBackoffMs: options.rateLimitBackoffMs ?? 30_000,
      baseBackoffMs: options.baseBackoffMs ?? 500,
      maxBackoffMs: options.maxBackoffMs ?? 10_000,
      maxConcurrent: options.maxConcurrent ?? 8,
      requestsPerSecond: options.requestsPerSecond ?? (options.apiKey ? 15 : 0),
    };
    this.providers = urls.map((url) => ({
      url: url.replace(/\/+$/, ''),
      origin: urlOrigin(url),
      limiter: new RequestLimiter(this.opts.maxConcurrent, this.opts.requestsPerSecond),
      failures: 0,
      downUntil: 0,
    }));
  }

  get origins(): string[] {
    return this.providers.map((p) => p.origin);
  }

  /** POSTs a JSON body to a path, rotating through providers that are not backed off. */
  async post<T>(path: string, body: Record<string, unknown> = {}): Promise<T> {
    let lastError: unknown = null;
    const n = this.providers.length;
    const start = this.current;
    for (let attempt = 0; attempt < n; attempt++) {
      const index = (start + attempt) % n;
      const p = this.providers[index];
      if (p.downUntil > Date.now()) {
        lastError ??= new Error(`${p.origin} backed off until ${new Date(p.downUntil).toISOString()}`);
        continue;
      }
      try {
        const answer = await p.limiter.run(() => this.request<T>(p, path, body));
        if (p.failures > 0) this.options.logger?.warn({ chainId: this.chainId, provider: p.origin }, 'Tron provider answers again');
        p.failures = 0;
        this.current = index;
        return answer;
      } catch (err) {
        lastError = err;
        this.backOff(p, err, path);
        this.current = (index + 1) % n;
      }
    }
    throw new TronUnavailableError(this.chainId, lastError);
  }

  private backOff(p: Provider, err: unknown, path: string): void {
    const status = err instanceof TronHttpError ? err.status : 0;
    p.failures++;
    const limited = status === 403 || status === 429;
    const delay = limited ? this.opts.rateLimitBackoffMs : Math.min(this.opts.maxBackoffMs, this.opts.baseBackoffMs * 2 ** (p.failures - 1));
    p.downUntil = Date.now() + delay;
    // One line per episode (the first failure), not one per retry of a provider that stays down.
    if (p.failures > 1 && !limited) return;
    this.options.logger?.warn(
      { chainId: this.chainId, provider: p.origin, path, status: status || undefined, backoffMs: delay, error: err instanceof Error ? err.message : String(err) },
      limited ? 'Tron provider rate-limited us: backing off and using the next one' : 'Tron provider failed: backing off and using the next one',
    );
  }

  private async request<T>(p: Provider, path: string, body: Record<string, unknown>): Promise<T> {
    this.calls++;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.options.apiKey) headers['TRON-PRO-API-KEY'] = this.options.apiKey;
    let res: Response;
    try {
      res = await fetch(`${p.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(this.opts.timeoutMs) });
    } catch (err) {
      // fetch errors name the URL; ours carry only the origin.
      throw new TronHttpError(`${p.origin}${path}: ${err instanceof Error && err.name === 'TimeoutError' ? 'timed out' : 'unreachable'}`, 0);
    }
    const text = await res.text();
    if (!res.ok) throw new TronHttpError(`${p.origin}${path}: HTTP ${res.status}`, res.status);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new TronHttpError(`${p.origin}${path}: answer is not JSON`, res.status);
    }
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed) && 'Error' in parsed) {
      throw new TronHttpError(`${p.origin}${path}: ${String((parsed as { Error: unknown }).Error).slice(0, 200)}`, res.status);
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
