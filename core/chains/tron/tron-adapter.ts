import { ProviderUnavailableError, UnstableChainError, type AdapterDeps, type BlockRef, type ChainAdapter, type ChainTransfer, type TokenVerdict } from '../adapter-contract';
import type { Chain } from '../chain';
import { hex20FromTron, hex41FromTron } from './tron-address';
import { BLOCKS_PER_RANGE_REQUEST, TronHttp, TronUnavailableError, type TronBlock, type TronTransactionInfo, type TronView } from './tron-http';
import { parseTronTransfers, type TronToken } from './tron-transfers';

/**
 * The Tron family's ChainAdapter (core/chains/adapter-contract.ts, issue 17).
 * - Final = solidified: `finalizedBlockNumber` is the solidified head; blocks at or below it are read
 *   from the solidified view (`/walletsolidity/*`).
 * - Early sight: `head` is the full node's head, so the core scans unsolidified blocks (read from
 *   `/wallet/*`) and records their transfers `pending` within seconds; a block the network drops
 *   before solidifying it shows as a parent-hash mismatch and the core drops its transfers.
 * - Confirmed = solidified: the chain's required confirmations are its solidification depth D
 *   (registry, `finality.depth`); confirmations on the wire count from the full node's head, but
 *   the core decides from `confirmingHead` (solidified head + D − 1), so a count of D is reached
 *   only by a solidified block even when solidification stalls. An organization's higher
 *   `confirmations.*` adds solidified blocks beyond that.
 * - Transfers: the range's blocks in requests of up to 100 (`getblockbylimitnext`), then
 *   `gettransactioninfobyblocknum` for each block holding a transaction that runs contract code
 *   (several requests in parallel, bounded by the client's per-provider limiter); the infos are
 *   trusted only when they are the block's transactions; in rounds of a few thousand
 *   transactions, so a range of mainnet blocks is never in memory whole. A block that cannot be
 *   read fails the range: nothing is skipped.
 */

/**
 * Blocks per `getblockbylimitnext` request: java-tron takes up to 100, but a mainnet block's JSON
 * holds a few hundred transactions (hundreds of kilobytes), so a request is sized to hold about
 * TRANSACTIONS_PER_REQUEST transactions at the density of the blocks read last (a few megabytes
 * within the client's timeout), from FIRST_BLOCKS_PER_REQUEST before any was read.
 */
const MAX_BLOCKS_PER_REQUEST = BLOCKS_PER_RANGE_REQUEST;
const FIRST_BLOCKS_PER_REQUEST = 20;
const TRANSACTIONS_PER_REQUEST = 2_000;

/**
 * Transactions a range holds in memory at once. A range is read in rounds of about this many: a
 * round's blocks and their transaction infos are read, its transfers kept, and its blocks dropped
 * before the next round. A mainnet block is a few hundred transactions, hundreds of kilobytes of
 * JSON with its infos: a whole range (500 blocks after a restart, up to 2,000 in a catch-up) held
 * at once would be hundreds of megabytes, past a worker's heap limit (docs/production.md). Light
 * blocks (testnets, tron-local) still come in one round per range.
 */
const TRANSACTIONS_PER_ROUND = 6_000;

/**
 * Contract types whose transactions run TVM code, the only code that writes event logs: a TRC-20
 * Transfer log of a configured token can come from any of them (a payout contract calling the token
 * emits the token's log under its own transaction), never from another type (TRX or TRC-10 transfers,
 * staking, votes, account changes).
 */
const CONTRACT_CODE_TYPES: ReadonlySet<string> = new Set(['TriggerSmartContract', 'CreateSmartContract']);

/** Whether a block's transaction infos can hold Transfer logs: a transaction of unknown shape counts as one that can. */
function runsContractCode(block: TronBlock): boolean {
  return (block.transactions ?? []).some((t) => {
    const contracts = (t as { raw_data?: { contract?: { type?: unknown }[] } } | null)?.raw_data?.contract;
    if (!Array.isArray(contracts) || contracts.length === 0) return true;
    return contracts.some((c) => typeof c?.type !== 'string' || CONTRACT_CODE_TYPES.has(c.type));
  });
}

/** The infos answer holds exactly the block's transactions (none for `{}`). */
function sameTransactions(block: TronBlock, infos: TronTransactionInfo[]): boolean {
  const ids = (block.transactions ?? []).map((t) => (t as { txID?: string }).txID);
  if (ids.length !== infos.length) return false;
  const answered = new Set(infos.map((i) => i.id));
  return ids.every((id) => id !== undefined && answered.has(id));
}

export class TronAdapter implements ChainAdapter {
  readonly protocol = 'tron' as const;
  /** Newest solidified height seen (decides which view serves a height). */
  private solidified = -1;
  /** Transactions per block of the blocks read last (null before any): sizes requests and rounds, nothing the core trusts. */
  private transactionsPerBlock: number | null = null;

  constructor(
    readonly chain: Chain,
    readonly http: TronHttp,
  ) {}

  /** The chain's HTTP client: its providers and API key, back-off lines on the process's logger, back-off on its clock. */
  static httpFor(chain: Chain, { logger, clock }: AdapterDeps): TronHttp {
    return new TronHttp(chain.chainId, chain.rpcUrls, { apiKey: chain.providerApiKey, logger: logger.child({ component: 'tron-http' }), clock });
  }

  get calls(): number {
    return this.http.calls;
  }

  /** Solidification depth: the confirmations a block has when it is solidified (a chain fact, never raised). */
  private get depth(): number {
    return this.chain.finality.kind === 'solidified' ? Math.max(1, this.chain.finality.depth) : 1;
  }

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof TronUnavailableError) throw new ProviderUnavailableError(this.chain.chainId, err);
      throw err;
    }
  }

  private toRef(b: TronBlock): BlockRef {
    const raw = b.block_header.raw_data;
    return { number: raw.number ?? 0, hash: b.blockID, parentHash: raw.parentHash, timestamp: Math.floor((raw.timestamp ?? 0) / 1000) };
  }

  private view(height: number): TronView {
    return height <= this.solidified ? 'walletsolidity' : 'wallet';
  }

  private async solidifiedHead(): Promise<BlockRef> {
    const b = await this.call(() => this.http.nowBlock('walletsolidity'));
    if (!b) throw new UnstableChainError(`${this.chain.chainId}: the provider has no solidified block`);
    const ref = this.toRef(b);
    this.solidified = Math.max(this.solidified, ref.number);
    return ref;
  }

  /** The full node's head: early sight scans up to it and the wire's confirmations count from it. */
  async head(): Promise<BlockRef> {
    const [full] = await Promise.all([this.call(() => this.http.nowBlock('wallet')), this.solidifiedHead()]);
    if (!full) throw new UnstableChainError(`${this.chain.chainId}: the provider has no latest block`);
    return this.toRef(full);
  }

  /**
   * Confirmed = solidified: the chain's count (the depth D) is reached only by a solidified block,
   * and a higher requirement (an organization's raise) counts solidified blocks beyond it, however
   * far solidification lags the head.
   */
  async confirmingHead(head: number): Promise<number> {
    return Math.min(head, (await this.solidifiedHead()).number + this.depth - 1);
  }

  async finalizedBlockNumber(): Promise<number | null> {
    return (await this.solidifiedHead()).number;
  }

  async blockAt(height: number): Promise<BlockRef | null> {
    const b = await this.call(() => this.http.blockByNum(this.view(height), height));
    return b ? this.toRef(b) : null;
  }

  /** Configured tokens by the bare hex of `log[].address`. */
  private tokens(): Map<string, TronToken> {
    const out = new Map<string, TronToken>();
    for (const t of Object.values(this.chain.tokens)) {
      const hex = t?.address ? hex20FromTron(t.address) : null;
      if (t && hex) out.set(hex, { currency: t.currency, address: t.address! });
    }
    return out;
  }

  /**
   * Every block of the range is read (`getblockbylimitnext`), in rounds of about
   * TRANSACTIONS_PER_ROUND transactions, and must be present, each height once and in order. A
   * block holding a transaction that runs contract code has its transaction infos read, and they
   * must be those of the block's transactions: `gettransactioninfobyblocknum`
   * answers `{}` both for an empty block and for a block the answering node does not have (a
   * lagging provider, or a lagging backend behind a load balancer), so `{}` is trusted only for a
   * block that has no transaction. A block whose transactions run no contract code (TRX transfers)
   * holds no Transfer log and is not asked. Anything else is UnstableChainError: the range is read
   * again, never skipped.
   */
  async transfersInRange(fromBlock: number, toBlock: number): Promise<ChainTransfer[]> {
    const tokens = this.tokens();
    if (tokens.size === 0 || toBlock < fromBlock) return [];
    const out: ChainTransfer[] = [];
    let previousId: string | null = null;
    for (let start = fromBlock; start <= toBlock; ) {
      const end = Math.min(toBlock, start + this.blocksPerRound() - 1);
      const blocks = await this.call(() => this.blocksOf(start, end));
      blocks.forEach((block, i) => {
        // The range is one chain, across rounds too: a block changed between two reads shows as a broken parent link.
        const parentId = i > 0 ? blocks[i - 1].blockID : previousId;
        if (parentId !== null && block.block_header.raw_data.parentHash !== parentId) {
          throw new UnstableChainError(`${this.chain.chainId}: block ${start + i} does not follow block ${start + i - 1}`);
        }
      });
      const withCode = blocks.filter(runsContractCode);
      const infos = await this.call(() => Promise.all(withCode.map((b) => this.http.transactionInfoByBlockNum(this.view(b.block_header.raw_data.number), b.block_header.raw_data.number))));
      withCode.forEach((block, i) => {
        const h = block.block_header.raw_data.number;
        if (!sameTransactions(block, infos[i])) throw new UnstableChainError(`${this.chain.chainId}: the transaction infos of block ${h} are not its transactions' (a provider without that block?)`);
        for (const t of parseTronTransfers(infos[i], tokens, this.toRef(block))) out.push({ chainId: this.chain.chainId, ...t });
      });
      previousId = blocks[blocks.length - 1].blockID;
      start = end + 1;
    }
    return out;
  }

  /** Blocks a `getblockbylimitnext` request asks for: about TRANSACTIONS_PER_REQUEST transactions. */
  private get blocksPerRequest(): number {
    if (this.transactionsPerBlock === null) return FIRST_BLOCKS_PER_REQUEST;
    return Math.max(1, Math.min(MAX_BLOCKS_PER_REQUEST, Math.floor(TRANSACTIONS_PER_REQUEST / Math.max(1, this.transactionsPerBlock))));
  }

  /** Blocks a round reads: about TRANSACTIONS_PER_ROUND transactions, at least one request's worth (one request before any block was read). */
  private blocksPerRound(): number {
    if (this.transactionsPerBlock === null) return this.blocksPerRequest;
    return Math.max(this.blocksPerRequest, Math.floor(TRANSACTIONS_PER_ROUND / Math.max(1, this.transactionsPerBlock)));
  }

  /**
   * The blocks fromBlock..toBlock, one per height in height order, in requests of at most
   * blocksPerRequest heights of one view (several in flight, bounded by the client's limiter).
   * A height missing from an answer (a provider that does not have it yet) or answered twice
   * fails the range.
   */
  private async blocksOf(fromBlock: number, toBlock: number): Promise<TronBlock[]> {
    const requests: { view: TronView; start: number; end: number }[] = [];
    for (let start = fromBlock; start <= toBlock; ) {
      const view = this.view(start);
      // A request stays within one view: the solidified one ends at the solidified head.
      const viewEnd = view === 'walletsolidity' ? Math.min(toBlock, this.solidified) : toBlock;
      const end = Math.min(viewEnd, start + this.blocksPerRequest - 1) + 1;
      requests.push({ view, start, end });
      start = end;
    }
    const answers = await Promise.all(requests.map((r) => this.http.blocksByRange(r.view, r.start, r.end)));
    const blocks: TronBlock[] = [];
    requests.forEach((r, i) => {
      const byHeight = new Map<number, TronBlock>();
      for (const b of answers[i]) {
        const h = b.block_header?.raw_data?.number;
        if (byHeight.has(h)) throw new UnstableChainError(`${this.chain.chainId}: block ${h} answered twice`);
        byHeight.set(h, b);
      }
      for (let h = r.start; h < r.end; h++) {
        const block = byHeight.get(h);
        if (!block) throw new UnstableChainError(`${this.chain.chainId}: block ${h} is not available yet`);
        blocks.push(block);
      }
    });
    const transactions = blocks.reduce((n, b) => n + (b.transactions?.length ?? 0), 0);
    this.transactionsPerBlock = transactions / blocks.length;
    return blocks;
  }

  /** decimals() of every configured token, read with triggerconstantcontract, against the registry. */
  async verifyTokens(): Promise<TokenVerdict> {
    const problems: string[] = [];
    for (const token of Object.values(this.chain.tokens)) {
      if (!token?.address) continue;
      const hex41 = hex41FromTron(token.address);
      if (!hex41) {
        problems.push(`TokenDecimalsMismatch: ${token.currency} address ${token.address} is not a Tron address`);
        continue;
      }
      const word = await this.call(() => this.http.constantCall(hex41, 'decimals()'));
      const onChain = word && /^[0-9a-fA-F]{1,64}$/.test(word) ? Number(BigInt(`0x${word}`)) : null;
      if (onChain !== token.decimals) {
        problems.push(`TokenDecimalsMismatch: ${token.currency} at ${token.address} reports decimals ${onChain ?? 'none'}, the registry expects ${token.decimals}`);
      }
    }
    return { ok: problems.length === 0, problems };
  }
}
