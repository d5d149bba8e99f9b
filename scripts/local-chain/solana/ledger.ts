import fs from 'node:fs';
import path from 'node:path';

/**
 * What solana-local records: blocks (slots that produced a block), their transactions with the
 * status metadata a validator stores (balances, token balances, logs, error), and per transaction
 * the accounts it changed (`writes`, post-state) and their previous state (`undo`), so that a fork
 * can really take a transaction's effects back. Persisted as an append-only log of JSON lines: the
 * chain state is a fresh LiteSVM plus every write in log order, so a restart neither re-executes
 * anything nor looks like a reset, and a hard kill loses at most the line being written.
 */

/** An account as stored: lamports and rentEpoch as decimal strings (u64), data base64. */
export interface StoredAccount {
  lamports: string;
  owner: string;
  data: string;
  executable: boolean;
  rentEpoch: string;
}

/** An account's state after (or, in `undo`, before) a transaction; null: it does not exist. */
export interface AccountWrite {
  address: string;
  account: StoredAccount | null;
}

export interface UiTokenAmount {
  amount: string;
  decimals: number;
  uiAmount: number | null;
  uiAmountString: string;
}

export interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  programId: string;
  uiTokenAmount: UiTokenAmount;
}

export interface CompiledInstructionJson {
  programIdIndex: number;
  accounts: number[];
  /** base58 */
  data: string;
  stackHeight: number | null;
}

export interface TxRecord {
  signature: string;
  /** The wire transaction, base64. */
  wire: string;
  version: 'legacy' | 0;
  loadedAddresses: { writable: string[]; readonly: string[] };
  /** The TransactionError in its JSON form, null when the transaction succeeded. */
  err: unknown;
  fee: number;
  preBalances: string[];
  postBalances: string[];
  preTokenBalances: TokenBalance[];
  postTokenBalances: TokenBalance[];
  logMessages: string[];
  innerInstructions: { index: number; instructions: CompiledInstructionJson[] }[];
  computeUnitsConsumed: number;
  /** Accounts the transaction changed, before (undo) and after (writes); dropped from memory once final. */
  undo?: AccountWrite[];
  writes?: AccountWrite[];
}

export interface BlockRecord {
  slot: number;
  parentSlot: number;
  blockhash: string;
  previousBlockhash: string;
  blockHeight: number;
  /** Unix seconds. */
  blockTime: number;
  txs: TxRecord[];
  /** The finalized slot when this block was made: finality never moves back across restarts. */
  finalized: number;
}

export type LedgerEntry =
  | { k: 'genesis'; genesisHash: string; createdAt: number }
  /** Accounts written directly (the faucet's genesis balance). */
  | { k: 'setup'; writes: AccountWrite[] }
  | { k: 'block'; block: BlockRecord }
  /** Slots up to `through` passed without a block. */
  | { k: 'skip'; through: number }
  /** The newest blocks (these slots) were dropped; their transactions' undo was applied, newest first. */
  | { k: 'fork'; dropped: number[] };

export class LedgerLog {
  constructor(readonly file: string | null) {}

  read(): LedgerEntry[] {
    if (!this.file || !fs.existsSync(this.file)) return [];
    const text = fs.readFileSync(this.file, 'utf8');
    const entries: LedgerEntry[] = [];
    let offset = 0;
    while (offset < text.length) {
      const end = text.indexOf('\n', offset);
      const line = text.slice(offset, end === -1 ? text.length : end);
      try {
        if (end === -1) throw new Error('no line end');
        if (line.trim()) entries.push(JSON.parse(line) as LedgerEntry);
      } catch (err) {
        // Only the last line can be torn (a hard kill while appending): cut it off, so the next
        // append starts a clean line. Anything else is corruption.
        if (end !== -1 && end < text.length - 1) throw new Error(`${this.file}: a line at byte ${offset} is not valid JSON (${(err as Error).message})`);
        fs.truncateSync(this.file, Buffer.byteLength(text.slice(0, offset)));
        break;
      }
      offset = end + 1;
    }
    return entries;
  }

  append(entry: LedgerEntry): void {
    if (!this.file) return;
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    fs.appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
  }
}
