import type { Chain, Currency, Protocol } from './chain';
import type { Clock } from '../platform/clock';
import type { Logger } from '../platform/logger';
import { withUrlsReduced } from '../platform/provider-urls';

/**
 * What a protocol family (EVM, Tron, Solana) supplies to the detection core (design.md §4b). It
 * lives beside the families, in core/chains/, so a family imports nothing of core/detection/ (the
 * core imports core/chains/, never the reverse).
 *
 * The core (core/detection/) owns everything that is the same for every chain: the checkpoint,
 * range selection, the reorg check and the walk-back to the fork point, matching recipients against
 * the watched pool addresses, attribution, recording, confirmation counting and the recompute
 * requests to orders and deposits. An adapter only talks to its chain and turns the answers into
 * the plain records below. Rules for an adapter:
 * - It imports only this file, core/chains/ and core/platform/ (never orders/, deposits/,
 *   webhooks/, transfers/ or the database; test/foundation/layering.test.ts): it holds no state
 *   the core must trust apart from its RPC client (back-off, call counter). Its address rules
 *   live beside it (chains/<family>/<family>-address.ts), where core/chains/addresses.ts finds them.
 * - Every method may be called outside any database transaction, and is: the core never holds a
 *   transaction open across an adapter call.
 * - Heights are block numbers (EVM, Tron) or slots (Solana); times are Unix seconds of the block.
 * - Errors: throw `RangeTooLargeError` when the provider refuses the size of a range query (the
 *   core halves the range and retries), `UnstableChainError` when the chain moved while answering
 *   (the core retries the range a few times), `ProviderUnavailableError` when no provider answers
 *   (the core counts it toward the chain-stall alert and tries again on its next tick). Any other
 *   error fails the job run; nothing is skipped because the checkpoint only moves after a range
 *   was fully recorded.
 */

/** A block (or slot) as the core needs it. */
export interface BlockRef {
  number: number;
  hash: string;
  /** Hash of the previous block; absent where the family does not expose it cheaply. */
  parentHash?: string;
  /** Unix seconds. */
  timestamp: number;
}

/** One token transfer seen on the chain, in plain values (no client objects). */
export interface ChainTransfer {
  chainId: string;
  txHash: string;
  /**
   * The transfer's position within its transaction: with (chainId, txHash) it is the transfer's
   * identity, which survives the transaction being re-mined at another position or in another block.
   * EVM: position among the configured tokens' Transfer logs of that transaction, ordered by block
   * log index (computable from one eth_getLogs answer). Tron: the log index within the
   * transaction. Solana: the index of the recipient token account in the transaction's account
   * list (static keys, then loaded writable, then loaded readonly).
   */
  indexInTx: number;
  /** Position of the log in the block (EVM log index); stored as data, not identity. */
  blockLogIndex: number;
  currency: Currency;
  /** Token contract or mint, in the family's normalised form. */
  tokenAddress: string;
  /** In the family's normalised form (core/chains/addresses.ts normalizeAddress, from the family's own rule). */
  fromAddress: string;
  /** Normalised likewise; matched by the core against the watched pool addresses. */
  toAddress: string;
  /** Base units; zero-amount transfers may be returned, the core ignores them. */
  amount: bigint;
  blockNumber: number;
  blockHash: string;
  /** Unix seconds of the transfer's block. */
  blockTimestamp: number;
}

/** Where the watched pool addresses come from, for families that must query per address (Solana). */
export interface WatchedAddressSource {
  /** Every watched address of the family, normalised. EVM and Tron never call it (they scan by token). */
  all(): Promise<string[]>;
  /**
   * The addresses that can receive now: allocated to an order, bound to a deposit reference, or
   * released within their cooldown (a late payment still lands there). What a per-address scan
   * (Solana `addresses` mode) asks about.
   */
  active(): Promise<string[]>;
}

/**
 * A height the chain passed without a block (a Solana skipped slot): a normal answer, neither a
 * provider failure nor a block that is not produced yet. The scan ends its ranges on blocks and
 * steps over skipped heights; the fork walk and confirmation counting do the same.
 */
export const SKIPPED = 'skipped' as const;
export type HeightAnswer = BlockRef | typeof SKIPPED | null;

export interface TokenVerdict {
  ok: boolean;
  /** Human-readable reasons when not ok (logged at error; the chain is then not scanned). */
  problems: string[];
}

export interface ChainAdapter {
  readonly protocol: Protocol;
  readonly chain: Chain;

  /** The newest block the provider knows (EVM `latest`, Tron now-block, Solana `confirmed` slot). */
  head(): Promise<BlockRef>;

  /**
   * The newest block that can no longer be reorganised by the chain's own rule (EVM depth or the
   * `finalized` tag, Tron solidified block, Solana `finalized` commitment), or null when unknown.
   * `head` is the head number the caller already holds (saves a call for depth rules).
   */
  finalizedBlockNumber(head: number): Promise<number | null>;

  /**
   * The height confirmations are decided from (core/detection/confirmations.ts): a transfer is
   * confirmed once confirmingHead − block + 1 reaches its required count. Absent: the head itself.
   * Tron: confirmed only once solidified, so the solidified head + depth − 1, never above the head.
   * The count on the wire stays head − block + 1.
   */
  confirmingHead?(head: number): Promise<number>;

  /** The canonical block at a height, or null when the provider has none there (yet, or skipped). */
  blockAt(height: number): Promise<BlockRef | null>;

  /**
   * Families whose heights can pass without a block (Solana): the block at a height, SKIPPED when
   * the chain passed it without one, null when it is not produced yet. Absent: every height up to
   * the head has a block, and blockAt says all.
   */
  heightAt?(height: number): Promise<HeightAnswer>;

  /**
   * Every transfer of the chain's configured tokens in blocks fromBlock..toBlock inclusive,
   * whatever its recipient (the core matches recipients in one query; the RPC cost must not grow
   * with the number of watched addresses). Each record carries its block's hash and time; an
   * adapter that has to read a header for the time must check that header's hash against the
   * transfer's and throw UnstableChainError on a mismatch.
   */
  transfersInRange(fromBlock: number, toBlock: number, watched: WatchedAddressSource): Promise<ChainTransfer[]>;

  /**
   * Checks the configured tokens against the chain (decimals read from the contract / mint equal
   * the registry's). The core caches the verdict per process and refuses to scan on a mismatch.
   */
  verifyTokens(): Promise<TokenVerdict>;

  /** JSON-RPC / HTTP requests sent so far (benchmarks and tests). */
  readonly calls: number;

  /**
   * Optional: new heads pushed by the provider (EVM `eth_subscribe newHeads` over WebSocket), so
   * a chain's work starts as soon as a block exists. Null when the chain has no push endpoint
   * configured. The subscription reconnects by itself with back-off and reports its state;
   * polling stays the safety net while it is down. `hash` is the pushed block's (null where the
   * push does not carry it): the head observation records it (head-observations.ts).
   */
  subscribeHeads?(onHead: (height: number, hash: string | null) => void, state: HeadSubscriptionState): HeadSubscription | null;
}

/** What a head subscription reports of its connection (the caller logs it). */
export interface HeadSubscriptionState {
  connected(url: string): void;
  dropped(url: string, reason: string, retryInMs: number): void;
}

export interface HeadSubscription {
  close(): Promise<void>;
}

/** What an adapter gets from the process that builds it (per-process state stays off module level). */
export interface AdapterDeps {
  /** The service context's logger: provider back-off and recovery lines. */
  logger: Logger;
  /** The service context's clock: provider back-off windows and request spacing (tests step it). */
  clock: Clock;
}

/** Builds the adapter of a chain of one family. */
export type ChainAdapterFactory = (chain: Chain, deps: AdapterDeps) => ChainAdapter;

/** The provider refused the size of a range query: the core shrinks the range and retries. */
export class RangeTooLargeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RangeTooLargeError';
  }
}

/** The chain changed while a range was being read (a header hash differs): read it again. */
export class UnstableChainError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnstableChainError';
  }
}

/** No provider of the chain answered. */
export class ProviderUnavailableError extends Error {
  constructor(chainId: string, cause: unknown) {
    // Provider errors quote the request's URL (ethers: info.requestUrl), credentials and all.
    super(`No RPC provider of ${chainId} answered: ${withUrlsReduced(cause instanceof Error ? cause.message : String(cause))}`);
    this.name = 'ProviderUnavailableError';
  }
}
