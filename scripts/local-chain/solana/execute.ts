import {
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Address,
  type CompiledTransactionMessage,
  type CompiledTransactionMessageWithLifetime,
  type LegacyCompiledTransactionMessage,
  type Transaction,
  type V0CompiledTransactionMessage,
} from '@solana/kit';
import type { FailedTransactionMetadata, LiteSVM, TransactionMetadata } from 'litesvm';
import type { AccountWrite, CompiledInstructionJson, StoredAccount, TokenBalance, TxRecord, UiTokenAmount } from './ledger';
import { fromBase64, RpcError, toBase58, toBase64 } from './wire';

/**
 * Executing one wire transaction on LiteSVM the way a validator records it: the accounts it names
 * (static keys, then those loaded from address lookup tables: writable, then readonly), their
 * lamports and token balances read before and after execution (LiteSVM keeps no such metadata),
 * the error in the validator's JSON form, and the accounts it changed with their previous state.
 */

export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
export const ADDRESS_LOOKUP_TABLE_PROGRAM = 'AddressLookupTab1e1111111111111111111111111';
const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
export const LAMPORTS_PER_SIGNATURE = 5000;
const TOKEN_PROGRAMS = new Set([TOKEN_PROGRAM, TOKEN_2022_PROGRAM]);

/** The message versions solana-local executes (mainnet's: legacy and v0). */
export type CompiledMessage = (LegacyCompiledTransactionMessage | V0CompiledTransactionMessage) & CompiledTransactionMessageWithLifetime;

export interface DecodedTransaction {
  signature: string;
  wire: Uint8Array;
  transaction: Transaction;
  message: CompiledMessage;
  version: 'legacy' | 0;
  blockhash: string;
  /** Every signature present (the transaction is fully signed). */
  signed: boolean;
}

const transactionDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();

export function decodeWireTransaction(wire: Uint8Array): DecodedTransaction {
  let transaction: Transaction;
  let message: CompiledTransactionMessage & CompiledTransactionMessageWithLifetime;
  try {
    transaction = transactionDecoder.decode(wire);
    message = messageDecoder.decode(transaction.messageBytes);
  } catch (err) {
    throw new RpcError(-32602, `invalid transaction: failed to deserialize solana_transaction::versioned::VersionedTransaction: ${(err as Error).message}`);
  }
  if (message.version !== 'legacy' && message.version !== 0) throw new RpcError(-32602, `invalid transaction: unsupported version ${String(message.version)}`);
  const sigs = Object.values(transaction.signatures);
  const first = sigs[0];
  return {
    signature: toBase58(first ?? new Uint8Array(64)),
    wire,
    transaction,
    message: message as CompiledMessage,
    version: message.version,
    blockhash: message.lifetimeToken,
    signed: sigs.length > 0 && sigs.every((s) => s !== null),
  };
}

export interface ResolvedAccounts {
  keys: string[];
  writable: boolean[];
  loaded: { writable: string[]; readonly: string[] };
}

const LOOKUP_TABLE_META_SIZE = 56;

/** The transaction's account list: static keys, then loaded writable, then loaded readonly. */
export function resolveAccounts(svm: LiteSVM, message: CompiledMessage): ResolvedAccounts | { err: string } {
  const keys: string[] = [...message.staticAccounts];
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = message.header;
  const writable = keys.map((_k, i) =>
    i < numSignerAccounts ? i < numSignerAccounts - numReadonlySignerAccounts : i < keys.length - numReadonlyNonSignerAccounts,
  );
  const loaded = { writable: [] as string[], readonly: [] as string[] };
  const lookups = message.version === 0 ? (message.addressTableLookups ?? []) : [];
  for (const pass of ['writableIndexes', 'readonlyIndexes'] as const) {
    for (const lookup of lookups) {
      const table = svm.getAccount(lookup.lookupTableAddress);
      if (!table.exists) return { err: 'AddressLookupTableNotFound' };
      if (table.programAddress !== ADDRESS_LOOKUP_TABLE_PROGRAM) return { err: 'InvalidAddressLookupTableOwner' };
      const count = Math.floor((table.data.length - LOOKUP_TABLE_META_SIZE) / 32);
      for (const index of lookup[pass]) {
        if (index >= count) return { err: 'InvalidAddressLookupTableIndex' };
        const start = LOOKUP_TABLE_META_SIZE + index * 32;
        const address = toBase58(table.data.slice(start, start + 32));
        (pass === 'writableIndexes' ? loaded.writable : loaded.readonly).push(address);
      }
    }
  }
  keys.push(...loaded.writable, ...loaded.readonly);
  writable.push(...loaded.writable.map(() => true), ...loaded.readonly.map(() => false));
  return { keys, writable, loaded };
}

/**
 * An account as the RPC sees it (a zero-lamport account does not exist). `withProgramData: false`
 * leaves an executable account's data out (a program's ELF): transactions never change it, and
 * reading it around every transaction would cost more than the transaction.
 */
export function readAccount(svm: LiteSVM, address: string, withProgramData = true): StoredAccount | null {
  const a = svm.getAccount(address as Address);
  if (!a.exists || a.lamports === 0n) return null;
  const data = a.executable && !withProgramData ? '' : toBase64(a.data);
  return { lamports: a.lamports.toString(), owner: a.programAddress, data, executable: a.executable, rentEpoch: '18446744073709551615' };
}

export function writeAccount(svm: LiteSVM, write: AccountWrite): void {
  const a = write.account;
  svm.setAccount({
    address: write.address as Address,
    lamports: (a ? BigInt(a.lamports) : 0n) as never,
    programAddress: (a ? a.owner : '11111111111111111111111111111111') as Address,
    data: a ? fromBase64(a.data) : new Uint8Array(),
    executable: a?.executable ?? false,
    space: BigInt(a ? fromBase64(a.data).length : 0),
  } as never);
}

const sameAccount = (a: StoredAccount | null, b: StoredAccount | null): boolean =>
  a === b || (!!a && !!b && a.lamports === b.lamports && a.owner === b.owner && a.data === b.data && a.executable === b.executable);

// --- token accounts ----------------------------------------------------------------------

const TOKEN_ACCOUNT_SIZE = 165;
const ACCOUNT_TYPE_ACCOUNT = 2;

export interface TokenAccountState {
  mint: string;
  owner: string;
  amount: bigint;
  state: number;
  delegate: string | null;
  delegatedAmount: bigint;
  isNative: bigint | null;
  closeAuthority: string | null;
  programId: string;
}

/** A token account of the Token or Token-2022 program (not a mint), as spl-token unpacks it. */
export function parseTokenAccount(account: StoredAccount | null): TokenAccountState | null {
  if (!account || !TOKEN_PROGRAMS.has(account.owner)) return null;
  const d = Buffer.from(account.data, 'base64');
  if (d.length < TOKEN_ACCOUNT_SIZE) return null;
  if (d.length > TOKEN_ACCOUNT_SIZE && (account.owner !== TOKEN_2022_PROGRAM || d[TOKEN_ACCOUNT_SIZE] !== ACCOUNT_TYPE_ACCOUNT)) return null;
  const state = d[108];
  if (state === 0) return null; // uninitialized: not unpackable
  const option = (offset: number) => (d.readUInt32LE(offset) === 1 ? toBase58(d.subarray(offset + 4, offset + 36)) : null);
  return {
    mint: toBase58(d.subarray(0, 32)),
    owner: toBase58(d.subarray(32, 64)),
    amount: d.readBigUInt64LE(64),
    delegate: option(72),
    state,
    isNative: d.readUInt32LE(109) === 1 ? d.readBigUInt64LE(113) : null,
    delegatedAmount: d.readBigUInt64LE(121),
    closeAuthority: option(129),
    programId: account.owner,
  };
}

export interface MintState {
  mintAuthority: string | null;
  supply: bigint;
  decimals: number;
  isInitialized: boolean;
  freezeAuthority: string | null;
  programId: string;
}

const MINT_SIZE = 82;
const ACCOUNT_TYPE_MINT = 1;

export function parseMint(account: StoredAccount | null): MintState | null {
  if (!account || !TOKEN_PROGRAMS.has(account.owner)) return null;
  const d = Buffer.from(account.data, 'base64');
  if (d.length < MINT_SIZE) return null;
  if (d.length !== MINT_SIZE && (account.owner !== TOKEN_2022_PROGRAM || d.length <= TOKEN_ACCOUNT_SIZE || d[TOKEN_ACCOUNT_SIZE] !== ACCOUNT_TYPE_MINT)) return null;
  if (d[45] !== 1) return null;
  const option = (offset: number) => (d.readUInt32LE(offset) === 1 ? toBase58(d.subarray(offset + 4, offset + 36)) : null);
  return { mintAuthority: option(0), supply: d.readBigUInt64LE(36), decimals: d[44], isInitialized: true, freezeAuthority: option(46), programId: account.owner };
}

/** spl-token's UiTokenAmount: the amount as an integer string, uiAmount a float, uiAmountString trimmed. */
export function uiTokenAmount(amount: bigint, decimals: number): UiTokenAmount {
  const scale = 10n ** BigInt(decimals);
  const whole = amount / scale;
  const fraction = (amount % scale).toString().padStart(decimals, '0').replace(/0+$/, '');
  const uiAmountString = fraction ? `${whole}.${fraction}` : whole.toString();
  return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString), uiAmountString };
}

function tokenBalances(keys: string[], accounts: (StoredAccount | null)[], skip: Set<number>, decimalsOf: (mint: string) => number | null): TokenBalance[] {
  const out: TokenBalance[] = [];
  accounts.forEach((account, accountIndex) => {
    if (skip.has(accountIndex) || TOKEN_PROGRAMS.has(keys[accountIndex])) return;
    const token = parseTokenAccount(account);
    if (!token) return;
    const decimals = decimalsOf(token.mint);
    if (decimals === null) return;
    out.push({ accountIndex, mint: token.mint, owner: token.owner, programId: token.programId, uiTokenAmount: uiTokenAmount(token.amount, decimals) });
  });
  return out;
}

// --- errors ------------------------------------------------------------------------------

// The names of litesvm's fieldless error enums, in their numeric order (dist/internal.d.ts).
const TX_ERRORS = [
  'AccountInUse', 'AccountLoadedTwice', 'AccountNotFound', 'ProgramAccountNotFound', 'InsufficientFundsForFee', 'InvalidAccountForFee',
  'AlreadyProcessed', 'BlockhashNotFound', 'CallChainTooDeep', 'MissingSignatureForFee', 'InvalidAccountIndex', 'SignatureFailure',
  'InvalidProgramForExecution', 'SanitizeFailure', 'ClusterMaintenance', 'AccountBorrowOutstanding', 'WouldExceedMaxBlockCostLimit',
  'UnsupportedVersion', 'InvalidWritableAccount', 'WouldExceedMaxAccountCostLimit', 'WouldExceedAccountDataBlockLimit', 'TooManyAccountLocks',
  'AddressLookupTableNotFound', 'InvalidAddressLookupTableOwner', 'InvalidAddressLookupTableData', 'InvalidAddressLookupTableIndex',
  'InvalidRentPayingAccount', 'WouldExceedMaxVoteCostLimit', 'WouldExceedAccountDataTotalLimit', 'MaxLoadedAccountsDataSizeExceeded',
  'ResanitizationNeeded', 'InvalidLoadedAccountsDataSizeLimit', 'UnbalancedTransaction', 'ProgramCacheHitMaxLimit', 'CommitCancelled',
];
const INSTRUCTION_ERRORS = [
  'GenericError', 'InvalidArgument', 'InvalidInstructionData', 'InvalidAccountData', 'AccountDataTooSmall', 'InsufficientFunds',
  'IncorrectProgramId', 'MissingRequiredSignature', 'AccountAlreadyInitialized', 'UninitializedAccount', 'UnbalancedInstruction',
  'ModifiedProgramId', 'ExternalAccountLamportSpend', 'ExternalAccountDataModified', 'ReadonlyLamportChange', 'ReadonlyDataModified',
  'DuplicateAccountIndex', 'ExecutableModified', 'RentEpochModified', 'NotEnoughAccountKeys', 'AccountDataSizeChanged',
  'AccountNotExecutable', 'AccountBorrowFailed', 'AccountBorrowOutstanding', 'DuplicateAccountOutOfSync', 'InvalidError',
  'ExecutableDataModified', 'ExecutableLamportChange', 'ExecutableAccountNotRentExempt', 'UnsupportedProgramId', 'CallDepth',
  'MissingAccount', 'ReentrancyNotAllowed', 'MaxSeedLengthExceeded', 'InvalidSeeds', 'InvalidRealloc', 'ComputationalBudgetExceeded',
  'PrivilegeEscalation', 'ProgramEnvironmentSetupFailure', 'ProgramFailedToComplete', 'ProgramFailedToCompile', 'Immutable',
  'IncorrectAuthority', 'AccountNotRentExempt', 'InvalidAccountOwner', 'ArithmeticOverflow', 'UnsupportedSysvar', 'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded', 'MaxAccountsExceeded', 'MaxInstructionTraceLengthExceeded', 'BuiltinProgramsMustConsumeComputeUnits',
  'BorshIoError',
];

/** litesvm's error object → the validator's TransactionError JSON (serde's externally tagged form). */
export function transactionErrorJson(err: ReturnType<FailedTransactionMetadata['err']>): unknown {
  if (typeof err === 'number') return TX_ERRORS[err] ?? `Unknown(${err})`;
  const name = err.constructor.name;
  if (name === 'TransactionErrorInstructionError') {
    const e = err as { index: number; err(): unknown };
    const inner = e.err();
    let ie: unknown;
    if (typeof inner === 'number') ie = INSTRUCTION_ERRORS[inner] ?? `Unknown(${inner})`;
    else if ((inner as { constructor: { name: string } }).constructor.name === 'InstructionErrorCustom') ie = { Custom: (inner as { code: number }).code };
    else ie = { BorshIoError: (inner as { msg: string }).msg };
    return { InstructionError: [e.index, ie] };
  }
  if (name === 'TransactionErrorDuplicateInstruction') return { DuplicateInstruction: (err as { index: number }).index };
  if (name === 'TransactionErrorInsufficientFundsForRent') return { InsufficientFundsForRent: { account_index: (err as { accountIndex: number }).accountIndex } };
  return { ProgramExecutionTemporarilyRestricted: { account_index: (err as { accountIndex: number }).accountIndex } };
}

const TX_ERROR_TEXT: Record<string, string> = {
  AccountNotFound: 'Attempt to debit an account but found no record of a prior credit.',
  InsufficientFundsForFee: 'Insufficient funds for fee',
  AlreadyProcessed: 'This transaction has already been processed',
  BlockhashNotFound: 'Blockhash not found',
  SignatureFailure: 'Transaction did not pass signature verification',
  AddressLookupTableNotFound: 'Transaction loads an address table account that doesn\'t exist',
};
const INSTRUCTION_ERROR_TEXT: Record<string, string> = {
  InsufficientFunds: 'insufficient funds for instruction',
  InvalidAccountData: 'invalid account data for instruction',
  InvalidArgument: 'invalid program argument',
  MissingRequiredSignature: 'missing required signature for instruction',
  AccountAlreadyInitialized: 'instruction requires an uninitialized account',
  UninitializedAccount: 'instruction requires an initialized account',
  IllegalOwner: 'Provided owner is not allowed',
};

/** The error's Display text, as in "Transaction simulation failed: <text>". */
export function transactionErrorText(err: unknown): string {
  if (typeof err === 'string') return TX_ERROR_TEXT[err] ?? err;
  const ie = (err as { InstructionError?: [number, unknown] }).InstructionError;
  if (ie) {
    const [index, inner] = ie;
    const text =
      typeof inner === 'string'
        ? (INSTRUCTION_ERROR_TEXT[inner] ?? inner)
        : 'Custom' in (inner as object)
          ? `custom program error: 0x${(inner as { Custom: number }).Custom.toString(16)}`
          : JSON.stringify(inner);
    return `Error processing Instruction ${index}: ${text}`;
  }
  return JSON.stringify(err);
}

// --- execution ---------------------------------------------------------------------------

export type Execution =
  | { landed: true; record: TxRecord }
  /** Not committed (no fee taken): a validator never puts it in a block. */
  | { landed: false; err: unknown; logs: string[]; unitsConsumed: number };

function priorityFee(message: CompiledMessage, keys: string[]): number {
  let price = 0n;
  let limit: number | null = null;
  let others = 0;
  for (const ix of message.instructions) {
    if (keys[ix.programAddressIndex] !== COMPUTE_BUDGET_PROGRAM) {
      others++;
      continue;
    }
    const d = Buffer.from(ix.data ?? new Uint8Array());
    if (d[0] === 2 && d.length >= 5) limit = d.readUInt32LE(1);
    if (d[0] === 3 && d.length >= 9) price = d.readBigUInt64LE(1);
  }
  if (price === 0n) return 0;
  const units = BigInt(limit ?? Math.min(1_400_000, 200_000 * others));
  return Number((price * units + 999_999n) / 1_000_000n);
}

/**
 * Executes the transaction on the SVM and returns its record, or why a validator would not
 * include it at all (it failed before any fee was charged).
 */
export function executeTransaction(svm: LiteSVM, tx: DecodedTransaction, decimalsOf: (mint: string) => number | null): Execution {
  const resolved = resolveAccounts(svm, tx.message);
  if ('err' in resolved) return { landed: false, err: resolved.err, logs: [], unitsConsumed: 0 };
  const { keys, writable, loaded } = resolved;
  const pre = keys.map((k) => readAccount(svm, k, false));
  let result: TransactionMetadata | FailedTransactionMetadata;
  try {
    result = svm.sendTransaction(tx.transaction);
  } catch {
    return { landed: false, err: 'SignatureFailure', logs: [], unitsConsumed: 0 };
  }
  const post = keys.map((k) => readAccount(svm, k, false));
  const failed = 'err' in result;
  const meta = failed ? (result as FailedTransactionMetadata).meta() : (result as TransactionMetadata);
  const err = failed ? transactionErrorJson((result as FailedTransactionMetadata).err()) : null;
  const feePayerPaid = BigInt(pre[0]?.lamports ?? 0) - BigInt(post[0]?.lamports ?? 0);
  if (failed && feePayerPaid <= 0n) return { landed: false, err, logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()) };

  const programIndexes = new Set<number>(tx.message.instructions.map((ix) => ix.programAddressIndex));
  const decimals = (mint: string) => decimalsOf(mint);
  const undo: AccountWrite[] = [];
  const writes: AccountWrite[] = [];
  keys.forEach((address, i) => {
    if (!writable[i] || sameAccount(pre[i], post[i]) || writes.some((w) => w.address === address)) return;
    undo.push({ address, account: pre[i] });
    writes.push({ address, account: post[i] });
  });
  const inner = meta.innerInstructions();
  const record: TxRecord = {
    signature: tx.signature,
    wire: toBase64(tx.wire),
    version: tx.version,
    loadedAddresses: loaded,
    err,
    fee: failed ? Number(feePayerPaid) : Object.keys(tx.transaction.signatures).length * LAMPORTS_PER_SIGNATURE + priorityFee(tx.message, keys),
    preBalances: pre.map((a) => a?.lamports ?? '0'),
    postBalances: post.map((a) => a?.lamports ?? '0'),
    preTokenBalances: tokenBalances(keys, pre, programIndexes, decimals),
    postTokenBalances: tokenBalances(keys, post, programIndexes, decimals),
    logMessages: meta.logs(),
    innerInstructions: inner
      .map((list, index) => ({
        index,
        instructions: list.map(
          (ii): CompiledInstructionJson => ({
            programIdIndex: ii.instruction().programIdIndex(),
            accounts: [...ii.instruction().accounts()],
            data: toBase58(ii.instruction().data()),
            stackHeight: ii.stackHeight(),
          }),
        ),
      }))
      .filter((x) => x.instructions.length > 0),
    computeUnitsConsumed: Number(meta.computeUnitsConsumed()),
    undo,
    writes,
  };
  return { landed: true, record };
}

/** A preflight: runs the transaction without changing state. */
export function simulate(svm: LiteSVM, tx: DecodedTransaction): { err: unknown; logs: string[]; unitsConsumed: number } {
  let result;
  try {
    result = svm.simulateTransaction(tx.transaction);
  } catch {
    return { err: 'SignatureFailure', logs: [], unitsConsumed: 0 };
  }
  if ('err' in result) {
    const meta = (result as FailedTransactionMetadata).meta();
    return { err: transactionErrorJson((result as FailedTransactionMetadata).err()), logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()) };
  }
  const meta = result.meta();
  return { err: null, logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()) };
}
