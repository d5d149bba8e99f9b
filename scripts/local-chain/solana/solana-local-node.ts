import { createHash, randomBytes } from 'node:crypto';
import { LiteSVM } from 'litesvm';
import { type AccountWrite, type BlockRecord, LedgerLog, type LedgerEntry, type StoredAccount, type TxRecord } from './ledger';
import { type DecodedTransaction, decodeWireTransaction, executeTransaction, parseMint, readAccount, simulate, transactionErrorText, writeAccount } from './execute';
import { RpcError, rpcErrors, toBase58 } from './wire';

/**
 * solana-local: a Solana JSON-RPC node for development and tests over LiteSVM (the real SVM with
 * the real SPL Token program, in process; no validator is installable from the registries we
 * reach). It produces a slot every `slotMs` (0: only on `solanaLocal_produceSlot`), executes each
 * submitted transaction at once against the working state and puts it in the next block, records
 * what a validator records about it, and answers in the validator's response formats (rpc.ts).
 * Commitment: `processed` is the newest block, `confirmed` `confirmationLag` blocks behind it,
 * `finalized` `finalizationLag` blocks behind it. Development controls (`solanaLocal_*`) skip slots
 * and fork away unfinalized blocks, really undoing their transactions. State lives in an
 * append-only ledger (ledger.ts) under the data directory.
 */

export interface SolanaLocalNodeOptions {
  /** The ledger file; none: memory only. */
  ledgerFile?: string | null;
  /** Slot interval in ms; 0 produces slots only on demand. */
  slotMs?: number;
  /** Blocks between the newest block and the newest confirmed one. */
  confirmationLag?: number;
  /** Blocks between the newest block and the newest finalized one. */
  finalizationLag?: number;
}

export type Commitment = 'processed' | 'confirmed' | 'finalized';

/** Blocks a blockhash stays valid for (MAX_PROCESSING_AGE). */
export const BLOCKHASH_VALID_BLOCKS = 150;
const GENESIS_FAUCET_LAMPORTS = 100_000_000n * 1_000_000_000n; // 100 M SOL

export interface TxLocation {
  block: BlockRecord;
  index: number;
}

export class SolanaLocalNode {
  readonly svm: LiteSVM;
  private readonly log: LedgerLog;
  /** The current fork, oldest first; blocks[i].slot strictly increases. */
  readonly blocks: BlockRecord[] = [];
  private readonly indexBySlot = new Map<number, number>();
  private readonly txBySignature = new Map<string, TxLocation>();
  /** Per account key: the signatures of the transactions naming it, in chain order. */
  private readonly signaturesByAddress = new Map<string, { slot: number; signature: string }[]>();
  /** Executed, waiting for the next block. */
  private pending: TxRecord[] = [];
  private highestSlot = 0;
  private finalizedFloor = 0;
  private mintDecimals = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  genesisHash = '';
  createdAt = 0;
  /** Signs a faucet transfer for requestAirdrop (set by startSolanaLocal, which holds the key). */
  faucet: ((to: string, lamports: bigint, blockhash: string) => Promise<Uint8Array>) | null = null;
  /** Facts startSolanaLocal adds to solanaLocal_info (test mints, payer). */
  details: Record<string, unknown> = {};
  slotMs: number;
  readonly confirmationLag: number;
  readonly finalizationLag: number;

  constructor(private readonly options: SolanaLocalNodeOptions = {}) {
    this.slotMs = options.slotMs ?? 400;
    this.confirmationLag = options.confirmationLag ?? 1;
    this.finalizationLag = options.finalizationLag ?? 32;
    if (this.confirmationLag > this.finalizationLag) throw new Error('confirmationLag cannot exceed finalizationLag');
    // Blockhashes and duplicates are checked here, as a validator does (LiteSVM would accept only
    // its own single latest blockhash, and refuse a transaction re-included after a fork).
    this.svm = new LiteSVM().withBlockhashCheck(false).withTransactionHistory(0n);
    this.log = new LedgerLog(options.ledgerFile ?? null);
    const entries = this.log.read();
    if (entries.length === 0) this.genesis();
    else for (const entry of entries) this.apply(entry);
    this.releaseFinal();
    this.syncSysvars();
  }

  // --- heads --------------------------------------------------------------------------

  get head(): BlockRecord {
    return this.blocks[this.blocks.length - 1];
  }

  private finalizedIndex(): number {
    const byLag = Math.max(0, this.blocks.length - 1 - this.finalizationLag);
    return Math.max(byLag, this.indexBySlot.get(this.finalizedFloor) ?? 0);
  }

  blockAtCommitment(commitment: Commitment): BlockRecord {
    if (commitment === 'processed') return this.head;
    const finalized = this.finalizedIndex();
    if (commitment === 'finalized') return this.blocks[finalized];
    return this.blocks[Math.max(finalized, this.blocks.length - 1 - this.confirmationLag)];
  }

  /** The block of this slot on the current fork, or null (never produced, skipped, or dropped by a fork). */
  blockAt(slot: number): BlockRecord | null {
    const i = this.indexBySlot.get(slot);
    return i === undefined ? null : this.blocks[i];
  }

  /** Blocks with slots in [from, to] of the current fork, in slot order. */
  blocksBetween(from: number, to: number): BlockRecord[] {
    let lo = 0;
    let hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.blocks[mid].slot < from) lo = mid + 1;
      else hi = mid;
    }
    const out: BlockRecord[] = [];
    for (let i = lo; i < this.blocks.length && this.blocks[i].slot <= to; i++) out.push(this.blocks[i]);
    return out;
  }

  findTransaction(signature: string): TxLocation | null {
    return this.txBySignature.get(signature) ?? null;
  }

  isPending(signature: string): boolean {
    return this.pending.some((t) => t.signature === signature);
  }

  /** Newest first. */
  signaturesFor(address: string): { slot: number; signature: string }[] {
    return [...(this.signaturesByAddress.get(address) ?? [])].reverse();
  }

  /** Whether a blockhash of the current fork is recent enough for a new transaction. */
  blockhashValid(blockhash: string, commitment: Commitment = 'processed'): boolean {
    const tip = this.blockAtCommitment(commitment);
    for (let i = (this.indexBySlot.get(tip.slot) ?? 0); i >= 0; i--) {
      const b = this.blocks[i];
      if (tip.blockHeight - b.blockHeight > BLOCKHASH_VALID_BLOCKS) return false;
      if (b.blockhash === blockhash) return true;
    }
    return false;
  }

  decimalsOf(mint: string): number | null {
    const known = this.mintDecimals.get(mint);
    if (known !== undefined) return known;
    const parsed = parseMint(readAccount(this.svm, mint));
    if (!parsed) return null;
    this.mintDecimals.set(mint, parsed.decimals);
    return parsed.decimals;
  }

  info(): Record<string, unknown> {
    const at = (c: Commitment) => this.blockAtCommitment(c).slot;
    return {
      genesisHash: this.genesisHash,
      processed: at('processed'),
      confirmed: at('confirmed'),
      finalized: at('finalized'),
      slotMs: this.slotMs,
      confirmationLag: this.confirmationLag,
      finalizationLag: this.finalizationLag,
      ...this.details,
    };
  }

  // --- producing slots ---------------------------------------------------------------------

  /** Seals the pending transactions into a block at the next slot; `count` more slots (empty after the first). */
  produceSlots(count = 1): BlockRecord[] {
    const made: BlockRecord[] = [];
    for (let i = 0; i < count; i++) {
      const parent = this.head;
      const slot = this.highestSlot + 1;
      const txs = this.pending;
      this.pending = [];
      const blockhash = toBase58(createHash('sha256').update(`${this.genesisHash}:${slot}:${parent.blockhash}:${txs.map((t) => t.signature).join(',')}`).digest());
      const block: BlockRecord = {
        slot,
        parentSlot: parent.slot,
        blockhash,
        previousBlockhash: parent.blockhash,
        blockHeight: parent.blockHeight + 1,
        blockTime: Math.max(parent.blockTime, Math.floor(Date.now() / 1000)),
        txs,
        finalized: this.finalizedFloor,
      };
      this.addBlock(block);
      block.finalized = this.blocks[this.finalizedIndex()].slot;
      this.log.append({ k: 'block', block });
      this.releaseFinal();
      made.push(block);
    }
    this.syncSysvars();
    return made;
  }

  /** The next `count` slots pass without a block (a leader that produced nothing). */
  skipSlots(count: number): { through: number } {
    this.highestSlot += count;
    this.log.append({ k: 'skip', through: this.highestSlot });
    this.syncSysvars();
    return { through: this.highestSlot };
  }

  /**
   * The cluster settles on another fork: the newest `blocks` unfinalized blocks are dropped (their
   * slots become skipped ones) and their transactions' effects undone. With `reinclude` their
   * transactions are executed again and go into the next block; without it they are gone.
   * Transactions still waiting for a block are executed again either way. Finalized blocks never change.
   */
  fork(blocks: number, reinclude: boolean): { dropped: number[]; reincluded: string[]; head: number } {
    const unfinalized = this.blocks.length - 1 - this.finalizedIndex();
    const n = Math.max(0, Math.min(blocks, unfinalized));
    const waiting = this.pending;
    this.pending = [];
    for (const tx of [...waiting].reverse()) this.undo(tx);
    const removed = this.dropBlocks(n);
    if (removed.length > 0) this.log.append({ k: 'fork', dropped: removed.map((b) => b.slot) });
    const again = [...(reinclude ? removed.flatMap((b) => b.txs) : []), ...waiting];
    const reincluded: string[] = [];
    for (const tx of again) {
      const execution = executeTransaction(this.svm, decodeWireTransaction(Buffer.from(tx.wire, 'base64')), (m) => this.decimalsOf(m));
      if (execution.landed) {
        this.pending.push(execution.record);
        reincluded.push(execution.record.signature);
      }
    }
    this.syncSysvars();
    return { dropped: removed.map((b) => b.slot), reincluded, head: this.head.slot };
  }

  // --- transactions --------------------------------------------------------------------

  /**
   * sendTransaction: executes a signed wire transaction now (it goes into the next block) or
   * refuses it as a validator's preflight would; with `skipPreflight` a transaction that fails in
   * execution still lands (fee paid, meta.err set) and one that cannot be executed is dropped.
   */
  submit(wire: Uint8Array, options: { skipPreflight?: boolean } = {}): string {
    const tx = decodeWireTransaction(wire);
    if (!tx.signed) throw rpcErrors.signatureVerificationFailure();
    const known = this.txBySignature.has(tx.signature) || this.isPending(tx.signature);
    const preflightError = (err: unknown, logs: string[] = [], unitsConsumed = 0) =>
      rpcErrors.preflightFailure(`Transaction simulation failed: ${transactionErrorText(err)}`, {
        accounts: null,
        err,
        innerInstructions: null,
        loadedAccountsDataSize: 0,
        logs,
        replacementBlockhash: null,
        returnData: null,
        unitsConsumed,
      });
    if (known) {
      if (options.skipPreflight) return tx.signature;
      throw preflightError('AlreadyProcessed');
    }
    if (!this.blockhashValid(tx.blockhash)) {
      if (options.skipPreflight) return tx.signature; // never lands
      throw preflightError('BlockhashNotFound');
    }
    if (!options.skipPreflight) {
      const sim = simulate(this.svm, tx);
      if (sim.err === 'SignatureFailure') throw rpcErrors.signatureVerificationFailure();
      if (sim.err !== null) throw preflightError(sim.err, sim.logs, sim.unitsConsumed);
    }
    const execution = this.execute(tx);
    if (!execution && !options.skipPreflight) throw new RpcError(-32002, 'Transaction simulation failed: the transaction could not be executed');
    return tx.signature;
  }

  private execute(tx: DecodedTransaction): TxRecord | null {
    const execution = executeTransaction(this.svm, tx, (m) => this.decimalsOf(m));
    if (!execution.landed) return null;
    this.pending.push(execution.record);
    return execution.record;
  }

  /** An account in the working state. */
  account(address: string): StoredAccount | null {
    return readAccount(this.svm, address);
  }

  /**
   * An account as of a commitment: `processed` is the working state (transactions waiting for
   * their block included); otherwise the state before the first later transaction that changed
   * it (its undo), so a confirmed or finalized read never shows what is not yet that final.
   */
  accountAt(address: string, commitment: Commitment): StoredAccount | null {
    if (commitment !== 'processed') {
      const at = this.indexBySlot.get(this.blockAtCommitment(commitment).slot)!;
      for (let i = at + 1; i <= this.blocks.length; i++) {
        const txs = i < this.blocks.length ? this.blocks[i].txs : this.pending;
        for (const tx of txs) {
          const before = tx.undo?.find((w) => w.address === address);
          if (before) return before.account;
        }
      }
    }
    return readAccount(this.svm, address);
  }

  // --- bookkeeping -------------------------------------------------------------------------

  private genesis(): void {
    this.genesisHash = toBase58(randomBytes(32));
    this.createdAt = Math.floor(Date.now() / 1000);
    this.log.append({ k: 'genesis', genesisHash: this.genesisHash, createdAt: this.createdAt });
    const block0: BlockRecord = {
      slot: 0,
      parentSlot: 0,
      blockhash: toBase58(createHash('sha256').update(`${this.genesisHash}:0`).digest()),
      previousBlockhash: '11111111111111111111111111111111',
      blockHeight: 0,
      blockTime: this.createdAt,
      txs: [],
      finalized: 0,
    };
    this.addBlock(block0);
    this.log.append({ k: 'block', block: block0 });
  }

  /** Accounts written outside any transaction (the faucet's genesis balance). */
  setupAccounts(writes: AccountWrite[]): void {
    for (const w of writes) writeAccount(this.svm, w);
    this.log.append({ k: 'setup', writes });
  }

  genesisFaucet(address: string): void {
    this.setupAccounts([{ address, account: { lamports: GENESIS_FAUCET_LAMPORTS.toString(), owner: '11111111111111111111111111111111', data: '', executable: false, rentEpoch: '18446744073709551615' } }]);
  }

  /** Replays one ledger entry (at start). */
  private apply(entry: LedgerEntry): void {
    switch (entry.k) {
      case 'genesis':
        this.genesisHash = entry.genesisHash;
        this.createdAt = entry.createdAt;
        return;
      case 'setup':
        for (const w of entry.writes) writeAccount(this.svm, w);
        return;
      case 'block':
        for (const tx of entry.block.txs) for (const w of tx.writes ?? []) writeAccount(this.svm, w);
        this.finalizedFloor = Math.max(this.finalizedFloor, entry.block.finalized);
        this.addBlock(entry.block);
        return;
      case 'skip':
        this.highestSlot = Math.max(this.highestSlot, entry.through);
        return;
      case 'fork': {
        const n = entry.dropped.length;
        this.dropBlocks(n);
        return;
      }
    }
  }

  private addBlock(block: BlockRecord): void {
    this.indexBySlot.set(block.slot, this.blocks.length);
    this.blocks.push(block);
    this.highestSlot = Math.max(this.highestSlot, block.slot);
    block.txs.forEach((tx, index) => {
      this.txBySignature.set(tx.signature, { block, index });
      for (const key of accountKeysOf(tx)) {
        let list = this.signaturesByAddress.get(key);
        if (!list) this.signaturesByAddress.set(key, (list = []));
        list.push({ slot: block.slot, signature: tx.signature });
      }
    });
  }

  /** What is final stays final (the floor survives restarts), and its undo is no longer kept in memory. */
  private releaseFinal(): void {
    const to = this.finalizedIndex();
    for (let i = this.indexBySlot.get(this.finalizedFloor) ?? 0; i <= to; i++) {
      for (const tx of this.blocks[i].txs) {
        delete tx.undo;
        delete tx.writes;
      }
    }
    this.finalizedFloor = this.blocks[to].slot;
  }

  /** Removes the newest n blocks, undoing their transactions newest first. */
  private dropBlocks(n: number): BlockRecord[] {
    const removed: BlockRecord[] = [];
    for (let i = 0; i < n; i++) {
      const block = this.blocks.pop()!;
      this.indexBySlot.delete(block.slot);
      for (const tx of [...block.txs].reverse()) {
        this.undo(tx);
        this.txBySignature.delete(tx.signature);
        for (const key of accountKeysOf(tx)) {
          const list = this.signaturesByAddress.get(key);
          if (list) this.signaturesByAddress.set(key, list.filter((s) => s.slot !== block.slot));
        }
      }
      removed.push(block);
    }
    return removed.reverse();
  }

  private undo(tx: TxRecord): void {
    if (!tx.undo) throw new Error(`solana-local: transaction ${tx.signature} is final and cannot be undone`);
    for (const w of [...tx.undo].reverse()) writeAccount(this.svm, w);
  }

  /** Clock and SlotHashes for the slot being built (address lookup tables check both). */
  private syncSysvars(): void {
    const building = this.highestSlot + 1;
    this.svm.warpToSlot(BigInt(building));
    const clock = this.svm.getClock();
    clock.unixTimestamp = BigInt(Math.floor(Date.now() / 1000));
    this.svm.setClock(clock);
    const recent = this.blocks.slice(-150).reverse();
    this.svm.setSlotHashes(recent.map((b) => ({ slot: BigInt(b.slot), hash: b.blockhash })) as never);
  }

  // --- running ------------------------------------------------------------------------------

  /** Starts producing slots on the timer (slotMs > 0). */
  startSlots(): void {
    this.running = true;
    this.setSlotMs(this.slotMs);
  }

  setSlotMs(slotMs: number): void {
    if (!Number.isInteger(slotMs) || slotMs < 0) throw rpcErrors.invalidParams('slotMs must be a non-negative integer');
    this.slotMs = slotMs;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (slotMs > 0 && this.running) this.timer = setInterval(() => this.produceSlots(1), slotMs);
  }

  /** Stops the timer; what was executed but not yet in a block goes into one, so nothing submitted is lost. */
  stopSlots(): void {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.pending.length > 0) this.produceSlots(1);
  }
}

/** Every key the transaction names: static keys and those loaded from lookup tables. */
export function accountKeysOf(tx: TxRecord): string[] {
  const decoded = decodeWireTransaction(Buffer.from(tx.wire, 'base64'));
  return [...decoded.message.staticAccounts, ...tx.loadedAddresses.writable, ...tx.loadedAddresses.readonly];
}
