import {
  createDefaultRpcTransport,
  createSolanaRpcFromTransport,
  isSolanaError,
  SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR,
  type Rpc,
  type RpcTransport,
  type SolanaRpcApi,
} from '@solana/kit';
import { systemClock, type Clock } from '../../platform/clock';
import { ProviderPool, type ProviderPoolLogger } from '../provider-pool';

/**
 * JSON-RPC access to one Solana chain over one or more providers, with `@solana/kit`'s client
 * (the same client the local chain's tooling uses): kit's RPC API over a transport of ours that
 * adds what a payment service needs (issue 27, "provider hygiene"):
 * - failover: the next provider answers while one is backed off; exponential back-off on failures,
 *   a 429 waits what its `Retry-After` says (else 10 s);
 * - a per-provider request budget (requests in flight and per second);
 * - an API key travels in the provider's URL (as Solana providers take it) and logs name a
 *   provider by its origin only (scheme, host, port), never its path or query;
 * - answers that say the provider is unfit (node unhealthy or behind, history or index missing)
 *   count as its failure; answers about the chain (a skipped slot, a block not available) are
 *   returned to the caller as they are.
 * Rotation, back-off, the budget and the failure lines are the provider pool's
 * (core/chains/provider-pool.ts); this file keeps kit's transport and JSON-RPC batches.
 */

export type SolanaRpcLogger = ProviderPoolLogger;

export interface SolanaRpcOptions {
  /** Requests started per second per provider (0: unlimited). */
  requestsPerSecond?: number;
  maxConcurrent?: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Back-off after a 429 without Retry-After. */
  rateLimitBackoffMs?: number;
  logger?: SolanaRpcLogger;
  /** The service context's clock (back-off windows, request spacing, Retry-After dates); the system clock when absent. */
  clock?: Clock;
}

/** One answer of a JSON-RPC batch: the result, or the error the provider gave for that request. */
export interface BatchAnswer {
  result?: unknown;
  error?: { code: number; message: string };
}

export class SolanaUnavailableError extends Error {
  constructor(chainId: string, cause: unknown) {
    super(`No Solana provider of ${chainId} answered: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'SolanaUnavailableError';
  }
}

/**
 * JSON-RPC error codes that describe the provider, not the chain: try another. -32005 node
 * unhealthy (behind), -32016 minimum context slot not reached, -32010 key excluded from the
 * secondary index, -32011 transaction history not available, -32019 long-term storage
 * unreachable, -32603 internal error.
 */
const PROVIDER_FAULTS: ReadonlySet<number> = new Set([-32005, -32016, -32010, -32011, -32019, -32603]);

class ProviderFault extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** A 429's Retry-After header, as answered. */
    readonly retryAfter: string | null = null,
  ) {
    super(message);
  }
}

export class SolanaRpcClient {
  /** JSON-RPC requests sent (benchmarks, tests). */
  calls = 0;
  /** HTTP requests sent: a batch of JSON-RPC requests is one (benchmarks). */
  httpRequests = 0;
  readonly rpc: Rpc<SolanaRpcApi>;
  /** The chain's providers (kit's HTTP transport to each): rotation, back-off, budget. */
  readonly pool: ProviderPool<RpcTransport>;

  constructor(
    readonly chainId: string,
    urls: string[],
    options: SolanaRpcOptions = {},
  ) {
    const clock = options.clock ?? systemClock;
    this.pool = new ProviderPool(
      urls.map((url) => ({ url, target: createDefaultRpcTransport({ url }) })),
      {
        chainId,
        family: 'Solana',
        unavailable: (cause) => new SolanaUnavailableError(chainId, cause),
        classify: (err) => {
          const fault = err instanceof ProviderFault ? err : null;
          if (fault?.status !== 429) return { kind: 'provider', status: fault?.status };
          return { kind: 'rate-limited', status: 429, backoffMs: retryAfterMs(fault.retryAfter, clock.now().getTime()) };
        },
        clock,
        logger: options.logger,
        requestsPerSecond: options.requestsPerSecond ?? 0,
        maxConcurrent: options.maxConcurrent ?? 8,
        baseBackoffMs: options.baseBackoffMs ?? 500,
        maxBackoffMs: options.maxBackoffMs ?? 10_000,
        rateLimitBackoffMs: options.rateLimitBackoffMs ?? 10_000,
      },
    );
    this.rpc = createSolanaRpcFromTransport(this.transport) as unknown as Rpc<SolanaRpcApi>;
  }

  get origins(): string[] {
    return this.pool.origins;
  }

  private readonly transport: RpcTransport = <T>(config: Parameters<RpcTransport>[0]) => {
    const method = (config.payload as { method?: string })?.method ?? '?';
    return this.pool.run((transport, origin) => this.send<T>(transport, origin, config), { method });
  };

  /**
   * Several requests of one method in one HTTP request (a JSON-RPC batch, which validators and
   * providers accept): one answer per request, in request order. A provider may answer a batch's
   * elements in any order, so each answer is matched to its request by its JSON-RPC `id`, never
   * by its place in the list; an answer list that does not answer every id exactly once fails the
   * call. An answer about the provider (node behind, internal error) in any element fails the
   * whole batch over to the next provider (send); answers about the chain (a skipped slot, a block
   * not available) are returned as they are. Plain JSON numbers: kit's big-integer parser is for
   * single requests only.
   */
  async batch(method: string, paramsList: readonly unknown[][]): Promise<BatchAnswer[]> {
    if (paramsList.length === 0) return [];
    const payload = paramsList.map((params, id) => ({ jsonrpc: '2.0', id, method, params }));
    const answers = await this.transport<unknown>({ payload });
    if (!Array.isArray(answers)) {
      const said = JSON.stringify(answers)?.slice(0, 200);
      throw new Error(`${this.chainId}: a ${method} batch of ${payload.length} was not answered with a list (${said}); a provider that refuses JSON-RPC batches needs SOLANA_BLOCKS_PER_REQUEST_<CHAIN>=1`);
    }
    const byId = new Map<number, BatchAnswer>();
    for (const one of answers) {
      const { id, result, error } = (one ?? {}) as { id?: unknown; result?: unknown; error?: BatchAnswer['error'] };
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= payload.length || byId.has(id)) {
        throw new Error(`${this.chainId}: ${method} batch of ${payload.length} answered an unknown or repeated id ${JSON.stringify(id)}`);
      }
      byId.set(id, error ? { error } : { result });
    }
    if (byId.size !== payload.length) throw new Error(`${this.chainId}: ${method} batch of ${payload.length} answered ${byId.size}`);
    return payload.map(({ id }) => byId.get(id)!);
  }

  private async send<T>(transport: RpcTransport, origin: string, config: Parameters<RpcTransport>[0]): Promise<T> {
    this.calls += Array.isArray(config.payload) ? config.payload.length : 1;
    this.httpRequests++;
    let answer: unknown;
    try {
      answer = await transport<T>({ ...config, signal: config.signal ?? AbortSignal.timeout(15_000) });
    } catch (err) {
      if (isSolanaError(err, SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR)) {
        const { statusCode, headers } = err.context;
        throw new ProviderFault(`${origin}: HTTP ${statusCode}`, statusCode, statusCode === 429 ? headers.get('retry-after') : null);
      }
      // fetch's own errors may name the URL; ours carry only the origin.
      throw new ProviderFault(`${origin}: ${err instanceof Error && err.name === 'TimeoutError' ? 'timed out' : 'unreachable'}`, 0);
    }
    for (const one of Array.isArray(answer) ? answer : [answer]) {
      const error = (one as { error?: { code?: number; message?: string } } | null)?.error;
      if (error && typeof error.code === 'number' && PROVIDER_FAULTS.has(error.code)) {
        throw new ProviderFault(`${origin}: ${error.code} ${String(error.message ?? '').slice(0, 200)}`, 0);
      }
    }
    return answer as T;
  }
}

/** Retry-After in seconds or as an HTTP date; null when absent or unreadable. Capped at 10 minutes. */
export function retryAfterMs(value: string | null, nowMs: number): number | null {
  if (!value) return null;
  const seconds = Number(value.trim());
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - nowMs;
  if (!Number.isFinite(ms) || ms < 0) return null;
  return Math.min(ms, 600_000);
}
