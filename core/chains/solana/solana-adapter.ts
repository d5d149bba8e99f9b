import {
  address,
  isSolanaError,
  signature as toSignature,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_BLOCK_NOT_AVAILABLE,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_LONG_TERM_STORAGE_SLOT_SKIPPED,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SLOT_SKIPPED,
  type Address,
} from '@solana/kit';
import { findAssociatedTokenPda } from '@solana-program/token';
import {
  ProviderUnavailableError,
  SKIPPED,
  UnstableChainError,
  type AdapterDeps,
  type BlockRef,
  type ChainAdapter,
  type ChainTransfer,
  type HeightAnswer,
  type TokenVerdict,
  type WatchedAddressSource,
} from '../adapter-contract';
import type { Chain, Currency, SolanaScanMode } from '../chain';
import { creditsOf, TOKEN_PROGRAM_ID, TOKEN_PROGRAMS, type RpcTransaction, type SolanaCredit } from './solana-balances';
import { SolanaRpcClient, SolanaUnavailableError } from './solana-rpc';

/**
 * The Solana family's ChainAdapter (core/chains/adapter-contract.ts, issue 27).
 * - Heights are slots. `head` is the `confirmed` slot; final is the `finalized` commitment, and a
 *   transfer is confirmed only once its slot is finalized (`confirmingHead`, as Tron's
 *   solidification): a confirmed slot that never finalizes (a fork) drops its transfers.
 * - Skipped slots are normal: `heightAt` tells a slot passed without a block (missing from
 *   `getBlocks`, or `-32007`/`-32009`) from one not produced yet.
 * - Credits by token balance change matched by owner (solana-balances.ts).
 * - Two scan modes (SOLANA_SCAN_MODE_<CHAIN>): `blocks` reads every block of a range (`getBlocks`,
 *   then `getBlock` with full transactions, rewards off): cost flat in the number of watched
 *   addresses. `addresses` asks, for each token account of the addresses that can receive now,
 *   `getSignaturesForAddress` back to the last signature seen, then `getTransaction` for the new
 *   ones: cost grows with active addresses only. Its token accounts are each owner's associated
 *   accounts of the configured mints plus any other token account of the owner seen before; a
 *   transfer to a non-associated account the service never saw is invisible to it.
 */

/**
 * `blocks` mode reads blocks in JSON-RPC batches of BLOCKS_PER_REQUEST getBlock calls (providers
 * cap batches, some at 10; SOLANA_BLOCKS_PER_REQUEST_<CHAIN> sets another size, 1 for a provider
 * that refuses batches): one HTTP request per 10 blocks instead of one per block is what lets a
 * catch-up of 100,000 mostly empty slots finish in seconds (bench:scan). Batches in flight: 4
 * while blocks are light, 2 once a round averaged more than BUSY_BLOCK_TRANSACTIONS (a mainnet
 * block is megabytes: 20 blocks in memory at most then).
 */
const BLOCKS_PER_REQUEST = 10;
const BATCHES_IN_FLIGHT_LIGHT = 4;
const BATCHES_IN_FLIGHT_BUSY = 2;
const BUSY_BLOCK_TRANSACTIONS = 100;
const FULL_BLOCK = { commitment: 'confirmed', encoding: 'json', transactionDetails: 'full', rewards: false, maxSupportedTransactionVersion: 0 } as const;
/** getBlock errors that say the chain passed the slot without a block (skipped, skipped in long-term storage). */
const SKIPPED_ERRORS = [SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SLOT_SKIPPED, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_LONG_TERM_STORAGE_SLOT_SKIPPED] as const;
/** getBlock errors that say the slot has no block (not available at the commitment, or skipped): kit's codes are the JSON-RPC ones. */
const NO_BLOCK_ERRORS = [SOLANA_ERROR__JSON_RPC__SERVER_ERROR_BLOCK_NOT_AVAILABLE, ...SKIPPED_ERRORS] as const;
const NO_BLOCK_CODES: ReadonlySet<number> = new Set(NO_BLOCK_ERRORS);
/** getSignaturesForAddress page size (the validator's maximum). */
const SIGNATURES_PAGE = 1000;

type Num = number | bigint;

interface RpcBlockHeader {
  blockhash: string;
  previousBlockhash: string;
  parentSlot: Num;
  blockTime: Num | null;
}

interface RpcFullBlock extends RpcBlockHeader {
  transactions?: readonly RpcTransaction[];
}

interface Cursor {
  signature: string;
  slot: number;
}

export class SolanaAdapter implements ChainAdapter {
  readonly protocol = 'solana' as const;
  readonly mode: SolanaScanMode;
  /** getBlock calls per HTTP request in `blocks` mode (1: plain requests, no JSON-RPC batch). */
  private readonly blocksPerRequest: number;
  /** Each mint's token program, learnt from the mint's owner by verifyTokens (classic Token before that). */
  private readonly mintPrograms = new Map<string, string>();
  /** `addresses` mode: newest signature seen per token account, with its slot. */
  private readonly cursors = new Map<string, Cursor>();
  /** `addresses` mode: token accounts of owners seen in their transactions besides the associated ones. */
  private readonly otherAccounts = new Map<string, Set<string>>();
  private readonly atas = new Map<string, string>();

  constructor(
    readonly chain: Chain,
    readonly client: SolanaRpcClient,
  ) {
    this.mode = chain.solanaScanMode ?? 'blocks';
    this.blocksPerRequest = chain.solanaBlocksPerRequest ?? BLOCKS_PER_REQUEST;
  }

  /** Configured mints → currency (read each time: a local chain's mints are learnt at run time). */
  private get mints(): Map<string, Currency> {
    const out = new Map<string, Currency>();
    for (const t of Object.values(this.chain.tokens)) if (t?.address) out.set(t.address, t.currency);
    return out;
  }

  /** The chain's RPC client: its providers, budget and back-off lines on the process's logger, back-off on its clock. */
  static clientFor(chain: Chain, { logger, clock }: AdapterDeps): SolanaRpcClient {
    return new SolanaRpcClient(chain.chainId, chain.rpcUrls, { requestsPerSecond: chain.rpcRequestsPerSecond ?? 0, logger: logger.child({ component: 'solana-rpc' }), clock });
  }

  get calls(): number {
    return this.client.calls;
  }

  private get rpc() {
    return this.client.rpc;
  }

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof SolanaUnavailableError) throw new ProviderUnavailableError(this.chain.chainId, err);
      throw err;
    }
  }

  /** The finalization depth: the confirmations a block has when its slot is finalized (a chain fact). */
  private get depth(): number {
    return this.chain.finality.kind === 'finalized-commitment' ? Math.max(1, this.chain.finality.depth) : 1;
  }

  private toRef(slot: number, b: RpcBlockHeader): BlockRef {
    return { number: slot, hash: b.blockhash, parentHash: b.previousBlockhash, timestamp: Number(b.blockTime ?? 0) };
  }

  private async slotAt(commitment: 'confirmed' | 'finalized'): Promise<number> {
    return Number(await this.call(() => this.rpc.getSlot({ commitment }).send()));
  }

  async head(): Promise<BlockRef> {
    const slot = await this.slotAt('confirmed');
    const block = await this.heightAt(slot);
    if (!block || block === SKIPPED) throw new UnstableChainError(`${this.chain.chainId}: the confirmed slot ${slot} has no block`);
    return block;
  }

  async finalizedBlockNumber(): Promise<number | null> {
    return this.slotAt('finalized');
  }

  /** Confirmed = finalized: the chain's count (the depth) is reached only by a finalized slot. */
  async confirmingHead(head: number): Promise<number> {
    return Math.min(head, (await this.slotAt('finalized')) + this.depth - 1);
  }

  async blockAt(height: number): Promise<BlockRef | null> {
    const answer = await this.heightAt(height);
    return answer === SKIPPED ? null : answer;
  }

  async heightAt(height: number): Promise<HeightAnswer> {
    if (height < 0) return null;
    try {
      const block = await this.call(() =>
        this.rpc
          .getBlock(BigInt(height), { commitment: 'confirmed', encoding: 'json', transactionDetails: 'none', rewards: false, maxSupportedTransactionVersion: 0 })
          .send(),
      );
      if (block) return this.toRef(height, block as unknown as RpcBlockHeader);
    } catch (err) {
      if (isSkippedError(err)) return SKIPPED;
      if (!isSolanaError(err, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_BLOCK_NOT_AVAILABLE)) throw err;
    }
    // Not available: skipped if the confirmed chain has passed the slot, else not produced yet.
    return height < (await this.slotAt('confirmed')) ? SKIPPED : null;
  }

  async transfersInRange(fromBlock: number, toBlock: number, watched: WatchedAddressSource): Promise<ChainTransfer[]> {
    if (this.mints.size === 0 || toBlock < fromBlock) return [];
    return this.mode === 'addresses' ? this.transfersByAddress(fromBlock, toBlock, watched) : this.transfersByBlock(fromBlock, toBlock);
  }

  private transfer(mints: Map<string, Currency>, credit: SolanaCredit, slot: number, block: Pick<BlockRef, 'hash' | 'timestamp'>, blockLogIndex: number): ChainTransfer {
    return {
      chainId: this.chain.chainId,
      txHash: credit.signature,
      indexInTx: credit.accountIndex,
      blockLogIndex,
      currency: mints.get(credit.mint)!,
      tokenAddress: credit.mint,
      fromAddress: credit.from,
      toAddress: credit.owner,
      amount: credit.amount,
      blockNumber: slot,
      blockHash: block.hash,
      blockTimestamp: block.timestamp,
    };
  }

  // --- blocks mode -----------------------------------------------------------------------

  /**
   * Every block of the range: the slots `getBlocks` lists (the others were skipped), each read in
   * full; consecutive blocks must link (parent slot and previous blockhash across the skipped slots
   * between them), else the chain moved while we read and the range is read again.
   * The list must end on toBlock, which has a block (the scan ends its ranges on one, scan.ts):
   * getBlocks lists slots up to the answering node's confirmed slot only, so a node whose confirmed
   * slot is below the range's end (a fork just moved it back; a node lagging behind a load
   * balancer) answers a list that stops short. Its missing slots would read as skipped and the
   * checkpoint would pass blocks never read (simulation 70001 missed a payment so: the confirmed
   * slot was back on the range's end, same hash, by the time the scan checked it). Read again.
   */
  private async transfersByBlock(fromBlock: number, toBlock: number): Promise<ChainTransfer[]> {
    const mints = this.mints;
    const mintSet = new Set(mints.keys());
    const slots = (await this.call(() => this.rpc.getBlocks(BigInt(fromBlock), BigInt(toBlock), { commitment: 'confirmed' }).send())).map(Number);
    if (slots[slots.length - 1] !== toBlock) {
      throw new UnstableChainError(`${this.chain.chainId}: getBlocks ${fromBlock}..${toBlock} listed up to ${slots.length > 0 ? slots[slots.length - 1] : 'nothing'}, not the range's end block`);
    }
    const out: ChainTransfer[] = [];
    let previous: { slot: number; hash: string } | null = null;
    let inFlight = BATCHES_IN_FLIGHT_LIGHT;
    for (let i = 0; i < slots.length; ) {
      const round = slots.slice(i, i + this.blocksPerRequest * inFlight);
      i += round.length;
      const requests: number[][] = [];
      for (let j = 0; j < round.length; j += this.blocksPerRequest) requests.push(round.slice(j, j + this.blocksPerRequest));
      const blocks = (await Promise.all(requests.map((batch) => this.fullBlocks(batch)))).flat();
      const transactions = blocks.reduce((n, b) => n + (b.transactions?.length ?? 0), 0);
      inFlight = transactions / blocks.length > BUSY_BLOCK_TRANSACTIONS ? BATCHES_IN_FLIGHT_BUSY : BATCHES_IN_FLIGHT_LIGHT;
      round.forEach((slot, j) => {
        const block = blocks[j];
        if (previous && (Number(block.parentSlot) !== previous.slot || block.previousBlockhash !== previous.hash)) {
          throw new UnstableChainError(`${this.chain.chainId}: block ${slot} does not follow block ${previous.slot}`);
        }
        previous = { slot, hash: block.blockhash };
        const ref = this.toRef(slot, block);
        (block.transactions ?? []).forEach((tx, position) => {
          for (const credit of creditsOf(tx, mintSet, TOKEN_PROGRAMS)) out.push(this.transfer(mints, credit, slot, ref, position * 256 + credit.accountIndex));
        });
      });
    }
    return out;
  }

  /**
   * Full blocks of listed slots, in one JSON-RPC batch, in the order of `slots` (the client matches
   * answers to requests by id). A listed slot without a block means the chain moved while we read
   * (the range is read again); any other error fails the read.
   */
  private async fullBlocks(slots: number[]): Promise<RpcFullBlock[]> {
    if (this.blocksPerRequest === 1) return Promise.all(slots.map((slot) => this.fullBlock(slot)));
    const answers = await this.call(() => this.client.batch('getBlock', slots.map((slot) => [slot, FULL_BLOCK])));
    return answers.map((answer, i) => {
      if (answer.error && !NO_BLOCK_CODES.has(answer.error.code)) throw new Error(`${this.chain.chainId}: getBlock ${slots[i]} failed: ${answer.error.code} ${answer.error.message}`);
      if (!answer.error && answer.result) return answer.result as RpcFullBlock;
      throw new UnstableChainError(`${this.chain.chainId}: block ${slots[i]} listed by getBlocks is not available`);
    });
  }

  /** One full block in a plain request (a provider that refuses JSON-RPC batches). */
  private async fullBlock(slot: number): Promise<RpcFullBlock> {
    try {
      const block = await this.call(() => this.rpc.getBlock(BigInt(slot), FULL_BLOCK).send());
      if (block) return block as unknown as RpcFullBlock;
    } catch (err) {
      if (!isOneOf(err, NO_BLOCK_ERRORS)) throw err;
    }
    throw new UnstableChainError(`${this.chain.chainId}: block ${slot} listed by getBlocks is not available`);
  }

  // --- addresses mode --------------------------------------------------------------------

  private async ata(owner: string, mint: string): Promise<string> {
    const key = `${owner}|${mint}`;
    let ata = this.atas.get(key);
    if (!ata) {
      const tokenProgram = (this.mintPrograms.get(mint) ?? TOKEN_PROGRAM_ID) as Address;
      [ata] = await findAssociatedTokenPda({ owner: address(owner), mint: address(mint), tokenProgram });
      this.atas.set(key, ata);
    }
    return ata;
  }

  /** The token accounts asked about for an owner: its associated accounts of the configured mints, and others seen before. */
  async tokenAccountsOf(owner: string): Promise<string[]> {
    const accounts = new Set<string>();
    for (const mint of this.mints.keys()) accounts.add(await this.ata(owner, mint));
    for (const other of this.otherAccounts.get(owner) ?? []) accounts.add(other);
    return [...accounts];
  }

  private async transfersByAddress(fromBlock: number, toBlock: number, watched: WatchedAddressSource): Promise<ChainTransfer[]> {
    const mints = this.mints;
    const owners = new Set(await watched.active());
    const accounts = (await Promise.all([...owners].map((o) => this.tokenAccountsOf(o)))).flat();
    const found = new Map<string, number>();
    await Promise.all(
      accounts.map(async (account) => {
        for (const s of await this.signaturesSince(account, fromBlock, toBlock)) found.set(s.signature, s.slot);
      }),
    );
    const transactions = await Promise.all([...found.keys()].map((sig) => this.transaction(sig)));
    const credits: { credit: SolanaCredit; slot: number }[] = [];
    for (const tx of transactions) {
      if (!tx || Number(tx.slot) < fromBlock || Number(tx.slot) > toBlock) continue;
      for (const credit of creditsOf(tx, new Set(mints.keys()), TOKEN_PROGRAMS)) {
        credits.push({ credit, slot: Number(tx.slot) });
        if (owners.has(credit.owner) && credit.tokenAccount) {
          const seen = this.otherAccounts.get(credit.owner) ?? new Set<string>();
          seen.add(credit.tokenAccount);
          this.otherAccounts.set(credit.owner, seen);
        }
      }
    }
    // getTransaction does not name the block: its hash (and that the slot has one) from the block itself.
    const blocks = new Map<number, BlockRef>();
    for (const slot of new Set(credits.map((c) => c.slot))) {
      const ref = await this.blockAt(slot);
      if (!ref) throw new UnstableChainError(`${this.chain.chainId}: slot ${slot} of a transaction has no block`);
      blocks.set(slot, ref);
    }
    return credits.map(({ credit, slot }) => this.transfer(mints, credit, slot, blocks.get(slot)!, positionOf(credit)));
  }

  /**
   * Successful confirmed signatures of a token account with slots in fromBlock..toBlock, newest
   * first, paging back to the last signature seen (when it is older than the range) or to the
   * first signature older than the range. The cursor moves only over what was read.
   */
  private async signaturesSince(account: string, fromBlock: number, toBlock: number): Promise<Cursor[]> {
    const cursor = this.cursors.get(account);
    const until = cursor && cursor.slot < fromBlock ? cursor.signature : undefined;
    const out: Cursor[] = [];
    let newest: Cursor | null = null;
    let before: string | undefined;
    for (;;) {
      const page = await this.call(() =>
        this.rpc
          .getSignaturesForAddress(address(account), {
            commitment: 'confirmed',
            limit: SIGNATURES_PAGE,
            ...(until ? { until: toSignature(until) } : {}),
            ...(before ? { before: toSignature(before) } : {}),
          })
          .send(),
      );
      let older = false;
      for (const s of page) {
        const slot = Number(s.slot);
        if (slot > toBlock) continue;
        newest ??= { signature: s.signature, slot };
        if (slot < fromBlock) {
          older = true;
          break;
        }
        if (s.err === null) out.push({ signature: s.signature, slot });
      }
      if (older || page.length < SIGNATURES_PAGE) break;
      before = page[page.length - 1].signature;
    }
    if (newest) this.cursors.set(account, newest);
    return out;
  }

  private async transaction(sig: string): Promise<(RpcTransaction & { slot: Num }) | null> {
    const tx = await this.call(() =>
      this.rpc.getTransaction(toSignature(sig), { commitment: 'confirmed', encoding: 'json', maxSupportedTransactionVersion: 0 }).send(),
    );
    return tx as unknown as (RpcTransaction & { slot: Num }) | null;
  }

  // --- tokens ----------------------------------------------------------------------------

  /** Each configured mint exists under a token program and has the registry's decimals. */
  async verifyTokens(): Promise<TokenVerdict> {
    const problems: string[] = [];
    for (const token of Object.values(this.chain.tokens)) {
      if (!token?.address) continue;
      let mint: Address;
      try {
        mint = address(token.address);
      } catch {
        problems.push(`TokenDecimalsMismatch: ${token.currency} mint ${token.address} is not a Solana address`);
        continue;
      }
      const { value } = await this.call(() => this.rpc.getAccountInfo(mint, { commitment: 'confirmed', encoding: 'jsonParsed' }).send());
      // Not there (yet): a chain just started has its mints one slot from confirmed. Fail this run
      // (the job tries again) rather than give a verdict the process would keep.
      if (!value) throw new Error(`${this.chain.chainId}: ${token.currency} mint ${token.address} not found at the confirmed commitment (not created yet, or a wrong TOKEN_ address)`);
      const parsed = (value?.data as { parsed?: { type?: string; info?: { decimals?: number } } } | undefined)?.parsed;
      if (!TOKEN_PROGRAMS.includes(value.owner) || parsed?.type !== 'mint') {
        problems.push(`TokenDecimalsMismatch: ${token.currency} mint ${token.address} is not a token mint on ${this.chain.chainId}`);
        continue;
      }
      this.mintPrograms.set(token.address, value.owner);
      if (parsed.info?.decimals !== token.decimals) {
        problems.push(`TokenDecimalsMismatch: ${token.currency} mint ${token.address} has decimals ${parsed.info?.decimals ?? 'none'}, the registry expects ${token.decimals}`);
      }
    }
    return { ok: problems.length === 0, problems };
  }
}

function isOneOf(err: unknown, codes: readonly (typeof NO_BLOCK_ERRORS)[number][]): boolean {
  return codes.some((code) => isSolanaError(err, code));
}

function isSkippedError(err: unknown): boolean {
  return isOneOf(err, SKIPPED_ERRORS);
}

/**
 * A stand-in for the position in the block in `addresses` mode (getTransaction does not tell it):
 * from the signature's first bytes and the account index, stable for the same transfer.
 */
function positionOf(credit: SolanaCredit): number {
  let h = 0;
  for (let i = 0; i < 6 && i < credit.signature.length; i++) h = (h * 58 + credit.signature.charCodeAt(i)) % 0x7fffff;
  return h * 256 + credit.accountIndex;
}
