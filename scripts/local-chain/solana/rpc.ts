import { decodeWireTransaction, parseMint, parseTokenAccount, readAccount, simulate, TOKEN_2022_PROGRAM, TOKEN_PROGRAM, uiTokenAmount } from './execute';
import type { BlockRecord, StoredAccount, TxRecord } from './ledger';
import { BLOCKHASH_VALID_BLOCKS, type Commitment, type SolanaLocalNode } from './solana-local-node';
import { fromBase58, fromBase64, RawNumber, RpcError, rpcErrors, toBase58 } from './wire';

/**
 * The JSON-RPC methods of solana-local, answered in the Agave validator's formats (field names,
 * defaults, errors): the methods the detection adapter and `@solana/kit`'s helpers use, plus the
 * development controls `solanaLocal_*`, which exist only on this local node.
 */

/** The version this node reports (getVersion, context.apiVersion). */
export const SOLANA_CORE_VERSION = '2.2.20';
const FEATURE_SET = 3294202862;
const MAX_BLOCKS_RANGE = 500_000;
const MAX_SIGNATURES_LIMIT = 1000;
const MAX_STATUS_QUERY = 256;
/** Slots a signature stays in the status cache (searched without searchTransactionHistory). */
const STATUS_CACHE_SLOTS = 300;
const U64_MAX = new RawNumber('18446744073709551615');
/** Accounts larger than this are refused in base58 (the validator's MAX_BASE58_BYTES). */
const MAX_BASE58_BYTES = 128;

type Params = unknown[];
interface Config {
  commitment?: Commitment;
  encoding?: string;
  minContextSlot?: number;
  maxSupportedTransactionVersion?: number;
  transactionDetails?: 'full' | 'signatures' | 'none' | 'accounts';
  rewards?: boolean;
  [key: string]: unknown;
}

function configOf(value: unknown): Config {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw rpcErrors.invalidParams('Invalid params: expected a configuration object');
  const c = value as Config;
  if (c.commitment !== undefined && !['processed', 'confirmed', 'finalized'].includes(c.commitment)) throw rpcErrors.invalidParams(`Invalid params: unknown variant \`${String(c.commitment)}\`, expected one of \`processed\`, \`confirmed\`, \`finalized\``);
  return c;
}

const commitmentOf = (c: Config): Commitment => c.commitment ?? 'finalized';

function atLeastConfirmed(c: Config): Commitment {
  const commitment = commitmentOf(c);
  if (commitment === 'processed') throw rpcErrors.belowConfirmed();
  return commitment;
}

function slotParam(value: unknown, what = 'slot'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw rpcErrors.invalidParams(`Invalid params: invalid type for ${what}: expected u64`);
  return value;
}

/** A base58 parameter of a fixed byte length (addresses 32, signatures 64), refused as the validator refuses it. */
function base58Param(value: unknown, length: 32 | 64): string {
  if (typeof value !== 'string') throw rpcErrors.invalidParams(`Invalid param: expected a base58 ${length === 32 ? 'address' : 'signature'}`);
  let bytes: Uint8Array;
  try {
    bytes = fromBase58(value);
  } catch {
    throw rpcErrors.invalidParams('Invalid param: Invalid');
  }
  if (bytes.length !== length) throw rpcErrors.invalidParams('Invalid param: WrongSize');
  return value;
}

const addressParam = (value: unknown): string => base58Param(value, 32);
const signatureParam = (value: unknown): string => base58Param(value, 64);

/** A block at a commitment, checked against minContextSlot. */
function contextBlock(node: SolanaLocalNode, c: Config): BlockRecord {
  const block = node.blockAtCommitment(commitmentOf(c));
  if (c.minContextSlot !== undefined && block.slot < c.minContextSlot) throw rpcErrors.minContextSlotNotReached(block.slot);
  return block;
}

const withContext = (block: BlockRecord, value: unknown) => ({ context: { apiVersion: SOLANA_CORE_VERSION, slot: block.slot }, value });

// --- accounts --------------------------------------------------------------------------------

function encodeAccount(
  node: SolanaLocalNode,
  account: StoredAccount,
  encoding: string | undefined,
  dataSlice?: { offset: number; length: number },
): Record<string, unknown> {
  const raw = Buffer.from(account.data, 'base64');
  const sliced = dataSlice ? raw.subarray(dataSlice.offset, dataSlice.offset + dataSlice.length) : raw;
  if ((encoding ?? 'binary') === 'binary' || encoding === 'base58') {
    if (sliced.length > MAX_BASE58_BYTES) throw rpcErrors.invalidParams(`Encoded binary (base 58) data should be less than ${MAX_BASE58_BYTES} bytes, please use Base64 encoding.`);
  }
  let data: unknown;
  switch (encoding ?? 'binary') {
    case 'binary':
      data = toBase58(sliced);
      break;
    case 'base58':
      data = [toBase58(sliced), 'base58'];
      break;
    case 'base64':
      data = [sliced.toString('base64'), 'base64'];
      break;
    case 'jsonParsed':
      data = parsedAccountData(account, (mint) => node.decimalsOf(mint)) ?? [raw.toString('base64'), 'base64'];
      break;
    default:
      throw rpcErrors.invalidParams(`Invalid params: encoding ${String(encoding)} is not supported by solana-local (binary, base58, base64, jsonParsed)`);
  }
  return { data, executable: account.executable, lamports: BigInt(account.lamports), owner: account.owner, rentEpoch: U64_MAX, space: raw.length };
}

/** The jsonParsed form of SPL Token mints and token accounts (others fall back to base64). */
function parsedAccountData(account: StoredAccount, decimalsOf: (mint: string) => number | null): Record<string, unknown> | null {
  const program = account.owner === TOKEN_2022_PROGRAM ? 'spl-token-2022' : account.owner === TOKEN_PROGRAM ? 'spl-token' : null;
  if (!program) return null;
  const space = Buffer.from(account.data, 'base64').length;
  const mint = parseMint(account);
  if (mint) {
    return {
      parsed: {
        info: { decimals: mint.decimals, freezeAuthority: mint.freezeAuthority, isInitialized: true, mintAuthority: mint.mintAuthority, supply: mint.supply.toString() },
        type: 'mint',
      },
      program,
      space,
    };
  }
  const token = parseTokenAccount(account);
  if (!token) return null;
  return { parsed: { info: tokenAccountInfo(token, decimalsOf(token.mint) ?? 0), type: 'account' }, program, space };
}

function tokenAccountInfo(token: NonNullable<ReturnType<typeof parseTokenAccount>>, decimals: number): Record<string, unknown> {
  const info: Record<string, unknown> = {};
  if (token.closeAuthority) info.closeAuthority = token.closeAuthority;
  if (token.delegate) {
    info.delegate = token.delegate;
    info.delegatedAmount = uiTokenAmount(token.delegatedAmount, decimals);
  }
  info.isNative = token.isNative !== null;
  info.mint = token.mint;
  info.owner = token.owner;
  if (token.isNative !== null) info.rentExemptReserve = uiTokenAmount(token.isNative, 9);
  info.state = token.state === 2 ? 'frozen' : 'initialized';
  info.tokenAmount = uiTokenAmount(token.amount, decimals);
  return info;
}

// --- transactions -----------------------------------------------------------------------------

function checkVersion(tx: TxRecord, maxVersion: number | undefined): void {
  if (tx.version === 0 && (maxVersion === undefined || maxVersion < 0)) throw rpcErrors.unsupportedTransactionVersion(0);
}

function jsonTransaction(tx: TxRecord): Record<string, unknown> {
  const decoded = decodeWireTransaction(Buffer.from(tx.wire, 'base64'));
  const m = decoded.message;
  const message: Record<string, unknown> = {
    accountKeys: [...m.staticAccounts],
    header: {
      numReadonlySignedAccounts: m.header.numReadonlySignerAccounts,
      numReadonlyUnsignedAccounts: m.header.numReadonlyNonSignerAccounts,
      numRequiredSignatures: m.header.numSignerAccounts,
    },
    instructions: m.instructions.map((ix) => ({
      accounts: [...(ix.accountIndices ?? [])],
      data: toBase58(new Uint8Array(ix.data ?? new Uint8Array())),
      programIdIndex: ix.programAddressIndex,
      stackHeight: 1,
    })),
    recentBlockhash: m.lifetimeToken,
  };
  if (m.version === 0) {
    message.addressTableLookups = (m.addressTableLookups ?? []).map((l) => ({
      accountKey: l.lookupTableAddress as string,
      readonlyIndexes: [...l.readonlyIndexes],
      writableIndexes: [...l.writableIndexes],
    }));
  }
  return { message, signatures: Object.values(decoded.transaction.signatures).map((s) => toBase58(s ?? new Uint8Array(64))) };
}

function encodedTransaction(tx: TxRecord, encoding: string): unknown {
  switch (encoding) {
    case 'json':
      return jsonTransaction(tx);
    case 'base64':
      return [tx.wire, 'base64'];
    case 'base58':
      return [toBase58(fromBase64(tx.wire)), 'base58'];
    default:
      throw rpcErrors.invalidParams(`Invalid params: encoding ${encoding} is not supported by solana-local for transactions (json, base64, base58)`);
  }
}

const status = (err: unknown) => (err === null ? { Ok: null } : { Err: err });
const lamports = (values: string[]) => values.map((v) => BigInt(v));

function meta(tx: TxRecord, options: { rewards: boolean; accountsOnly?: boolean }): Record<string, unknown> {
  const out: Record<string, unknown> = {
    computeUnitsConsumed: tx.computeUnitsConsumed,
    err: tx.err,
    fee: tx.fee,
    innerInstructions: tx.innerInstructions,
    loadedAddresses: tx.loadedAddresses,
    logMessages: tx.logMessages,
    postBalances: lamports(tx.postBalances),
    postTokenBalances: tx.postTokenBalances,
    preBalances: lamports(tx.preBalances),
    preTokenBalances: tx.preTokenBalances,
    rewards: [],
    status: status(tx.err),
  };
  if (options.accountsOnly) {
    delete out.computeUnitsConsumed;
    delete out.innerInstructions;
    delete out.loadedAddresses;
    delete out.logMessages;
  }
  // getBlock with rewards: false writes each transaction's rewards as null.
  if (!options.rewards) out.rewards = null;
  return out;
}

function accountsTransaction(tx: TxRecord): Record<string, unknown> {
  const decoded = decodeWireTransaction(Buffer.from(tx.wire, 'base64'));
  const m = decoded.message;
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = m.header;
  const keys: { pubkey: string; signer: boolean; source: string; writable: boolean }[] = m.staticAccounts.map((pubkey, i) => ({
    pubkey: pubkey as string,
    signer: i < numSignerAccounts,
    source: 'transaction',
    writable: i < numSignerAccounts ? i < numSignerAccounts - numReadonlySignerAccounts : i < m.staticAccounts.length - numReadonlyNonSignerAccounts,
  }));
  for (const pubkey of tx.loadedAddresses.writable) keys.push({ pubkey, signer: false, source: 'lookupTable', writable: true });
  for (const pubkey of tx.loadedAddresses.readonly) keys.push({ pubkey, signer: false, source: 'lookupTable', writable: false });
  return { accountKeys: keys, signatures: Object.values(decoded.transaction.signatures).map((s) => toBase58(s ?? new Uint8Array(64))) };
}

function transactionWithMeta(tx: TxRecord, c: Config, details: 'full' | 'accounts', rewards: boolean): Record<string, unknown> {
  checkVersion(tx, c.maxSupportedTransactionVersion);
  const out: Record<string, unknown> =
    details === 'accounts'
      ? { meta: meta(tx, { rewards, accountsOnly: true }), transaction: accountsTransaction(tx) }
      : { meta: meta(tx, { rewards }), transaction: encodedTransaction(tx, c.encoding ?? 'json') };
  if (c.maxSupportedTransactionVersion !== undefined) out.version = tx.version;
  return out;
}

function encodeBlock(block: BlockRecord, c: Config): Record<string, unknown> {
  const details = c.transactionDetails ?? 'full';
  const rewards = c.rewards ?? true;
  const out: Record<string, unknown> = {
    blockHeight: block.blockHeight,
    blockTime: block.blockTime,
    blockhash: block.blockhash,
    parentSlot: block.parentSlot,
    previousBlockhash: block.previousBlockhash,
  };
  if (details === 'full' || details === 'accounts') out.transactions = block.txs.map((tx) => transactionWithMeta(tx, c, details, rewards));
  else if (details === 'signatures') out.signatures = block.txs.map((tx) => tx.signature);
  else if (details !== 'none') throw rpcErrors.invalidParams(`Invalid params: unknown variant \`${String(details)}\`, expected one of \`full\`, \`accounts\`, \`signatures\`, \`none\``);
  if (rewards) out.rewards = [];
  return out;
}

/**
 * A block as getBlock sees it (Agave's get_block): up to the finalized slot a missing block is a
 * skipped slot (-32007); above it, a block the requested commitment has not reached (or a slot
 * not produced, skipped or dropped yet) is not available (-32004).
 */
function committedBlock(node: SolanaLocalNode, slot: number, commitment: Commitment): BlockRecord {
  const finalized = node.blockAtCommitment('finalized');
  const block = node.blockAt(slot);
  if (slot <= finalized.slot) {
    if (block) return block;
    throw rpcErrors.slotSkipped(slot);
  }
  if (commitment === 'confirmed' && block && slot <= node.blockAtCommitment('confirmed').slot) return block;
  throw rpcErrors.blockNotAvailable(slot);
}

function transactionStatus(node: SolanaLocalNode, signature: string, searchHistory: boolean): Record<string, unknown> | null {
  const found = node.findTransaction(signature);
  if (!found) return null;
  const { block, index } = found;
  const head = node.head;
  if (!searchHistory && head.slot - block.slot > STATUS_CACHE_SLOTS) return null;
  const tx = block.txs[index];
  const finalized = block.slot <= node.blockAtCommitment('finalized').slot;
  const confirmed = block.slot <= node.blockAtCommitment('confirmed').slot;
  return {
    confirmationStatus: finalized ? 'finalized' : confirmed ? 'confirmed' : 'processed',
    confirmations: finalized ? null : head.blockHeight - block.blockHeight,
    err: tx.err,
    slot: block.slot,
    status: status(tx.err),
  };
}

function decodeSubmitted(value: unknown, encoding: unknown): Uint8Array {
  if (typeof value !== 'string') throw rpcErrors.invalidParams('Invalid params: expected an encoded transaction');
  try {
    if (encoding === 'base64') return fromBase64(value);
    if (encoding === undefined || encoding === 'base58') return fromBase58(value);
  } catch {
    throw rpcErrors.invalidParams(`invalid transaction: invalid ${String(encoding ?? 'base58')} encoding`);
  }
  throw rpcErrors.invalidParams(`Invalid params: unsupported encoding: ${String(encoding)}. Supported encodings: base58, base64`);
}

// --- dispatch ---------------------------------------------------------------------------------

export async function handleRpc(node: SolanaLocalNode, method: string, params: Params): Promise<unknown> {
  switch (method) {
    case 'getHealth':
      return 'ok';
    case 'getVersion':
      return { 'feature-set': FEATURE_SET, 'solana-core': SOLANA_CORE_VERSION };
    case 'getGenesisHash':
      return node.genesisHash;
    case 'getFirstAvailableBlock':
      return 0;
    case 'minimumLedgerSlot':
      return 0;
    case 'getSlot':
      return contextBlock(node, configOf(params[0])).slot;
    case 'getBlockHeight':
      return contextBlock(node, configOf(params[0])).blockHeight;
    case 'getEpochInfo': {
      const b = contextBlock(node, configOf(params[0]));
      const slotsInEpoch = 432_000;
      return {
        absoluteSlot: b.slot,
        blockHeight: b.blockHeight,
        epoch: Math.floor(b.slot / slotsInEpoch),
        slotIndex: b.slot % slotsInEpoch,
        slotsInEpoch,
        transactionCount: node.blocks.reduce((n, x) => n + x.txs.length, 0),
      };
    }
    case 'getLatestBlockhash': {
      const b = contextBlock(node, configOf(params[0]));
      return withContext(b, { blockhash: b.blockhash, lastValidBlockHeight: b.blockHeight + BLOCKHASH_VALID_BLOCKS });
    }
    case 'isBlockhashValid': {
      const c = configOf(params[1]);
      const b = contextBlock(node, c);
      if (typeof params[0] !== 'string') throw rpcErrors.invalidParams('Invalid param: expected a blockhash');
      return withContext(b, node.blockhashValid(params[0], commitmentOf(c)));
    }
    case 'getBlocks': {
      const start = slotParam(params[0], 'start_slot');
      const endGiven = typeof params[1] === 'number' ? slotParam(params[1], 'end_slot') : null;
      const c = configOf(params[1] !== null && typeof params[1] === 'object' ? params[1] : params[2]);
      const commitment = atLeastConfirmed(c);
      const end = Math.min(endGiven ?? start + MAX_BLOCKS_RANGE, node.blockAtCommitment(commitment).slot);
      if (end < start) return [];
      if (end - start > MAX_BLOCKS_RANGE) throw rpcErrors.invalidParams(`Slot range too large; max ${MAX_BLOCKS_RANGE}`);
      return node.blocksBetween(start, end).map((b) => b.slot);
    }
    case 'getBlocksWithLimit': {
      const start = slotParam(params[0], 'start_slot');
      const limit = slotParam(params[1], 'limit');
      const commitment = atLeastConfirmed(configOf(params[2]));
      if (limit > MAX_BLOCKS_RANGE) throw rpcErrors.invalidParams(`Limit too large; max ${MAX_BLOCKS_RANGE}`);
      return node
        .blocksBetween(start, node.blockAtCommitment(commitment).slot)
        .slice(0, limit)
        .map((b) => b.slot);
    }
    case 'getBlock': {
      const slot = slotParam(params[0]);
      const c = typeof params[1] === 'string' ? { encoding: params[1] } : configOf(params[1]);
      const commitment = atLeastConfirmed(c);
      if (c.encoding === 'jsonParsed') throw rpcErrors.invalidParams('Invalid params: encoding jsonParsed is not supported by solana-local for transactions (json, base64, base58)');
      return encodeBlock(committedBlock(node, slot, commitment), c);
    }
    case 'getBlockTime': {
      const slot = slotParam(params[0]);
      if (slot === 0) return node.createdAt;
      const finalized = node.blockAtCommitment('finalized');
      const block = node.blockAt(slot);
      if (slot <= finalized.slot && !block) throw rpcErrors.slotSkipped(slot);
      if (!block) throw rpcErrors.blockNotAvailable(slot);
      return block.blockTime;
    }
    case 'getTransaction': {
      const signature = signatureParam(params[0]);
      const c = typeof params[1] === 'string' ? { encoding: params[1] } : configOf(params[1]);
      const commitment = atLeastConfirmed(c);
      if (c.encoding === 'jsonParsed') throw rpcErrors.invalidParams('Invalid params: encoding jsonParsed is not supported by solana-local for transactions (json, base64, base58)');
      const found = node.findTransaction(signature);
      if (!found || found.block.slot > node.blockAtCommitment(commitment).slot) return null;
      const { block, index } = found;
      const tx = block.txs[index];
      checkVersion(tx, c.maxSupportedTransactionVersion);
      const out: Record<string, unknown> = {
        blockTime: block.blockTime,
        meta: meta(tx, { rewards: true }),
        slot: block.slot,
        transaction: encodedTransaction(tx, c.encoding ?? 'json'),
      };
      if (c.maxSupportedTransactionVersion !== undefined) out.version = tx.version;
      return out;
    }
    case 'getSignaturesForAddress': {
      const address = addressParam(params[0]);
      const c = configOf(params[1]) as Config & { limit?: number; before?: string; until?: string };
      atLeastConfirmed(c);
      const limit = c.limit ?? MAX_SIGNATURES_LIMIT;
      if (!Number.isInteger(limit) || limit <= 0 || limit > MAX_SIGNATURES_LIMIT) throw rpcErrors.invalidParams(`Invalid limit; max ${MAX_SIGNATURES_LIMIT}`);
      const highest = contextBlock(node, c).slot;
      const finalizedSlot = node.blockAtCommitment('finalized').slot;
      let list = node.signaturesFor(address).filter((s) => s.slot <= highest);
      if (c.before !== undefined) {
        const at = list.findIndex((s) => s.signature === signatureParam(c.before));
        if (at === -1) return [];
        list = list.slice(at + 1);
      }
      if (c.until !== undefined) {
        const at = list.findIndex((s) => s.signature === signatureParam(c.until));
        if (at !== -1) list = list.slice(0, at);
      }
      return list.slice(0, limit).map(({ slot, signature }) => {
        const { block, index } = node.findTransaction(signature)!;
        const tx = block.txs[index];
        return {
          blockTime: block.blockTime,
          confirmationStatus: slot <= finalizedSlot ? 'finalized' : 'confirmed',
          err: tx.err,
          memo: null,
          signature,
          slot,
        };
      });
    }
    case 'getSignatureStatuses': {
      const list = params[0];
      if (!Array.isArray(list)) throw rpcErrors.invalidParams('Invalid params: expected an array of signatures');
      if (list.length > MAX_STATUS_QUERY) throw rpcErrors.invalidParams(`Too many inputs provided; max ${MAX_STATUS_QUERY}`);
      const c = configOf(params[1]) as Config & { searchTransactionHistory?: boolean };
      const sigs = list.map(signatureParam);
      return withContext(node.head, sigs.map((s) => transactionStatus(node, s, c.searchTransactionHistory === true)));
    }
    case 'getAccountInfo': {
      const address = addressParam(params[0]);
      const c = configOf(params[1]) as Config & { dataSlice?: { offset: number; length: number } };
      const b = contextBlock(node, c);
      const account = node.accountAt(address, commitmentOf(c));
      return withContext(b, account ? encodeAccount(node, account, c.encoding, c.dataSlice) : null);
    }
    case 'getMultipleAccounts': {
      if (!Array.isArray(params[0])) throw rpcErrors.invalidParams('Invalid params: expected an array of addresses');
      if (params[0].length > 100) throw rpcErrors.invalidParams('Too many inputs provided; max 100');
      const c = configOf(params[1]) as Config & { dataSlice?: { offset: number; length: number } };
      const b = contextBlock(node, c);
      return withContext(
        b,
        params[0].map((a) => {
          const account = node.accountAt(addressParam(a), commitmentOf(c));
          return account ? encodeAccount(node, account, c.encoding ?? 'base64', c.dataSlice) : null;
        }),
      );
    }
    case 'getBalance': {
      const address = addressParam(params[0]);
      const c = configOf(params[1]);
      const b = contextBlock(node, c);
      return withContext(b, BigInt(node.accountAt(address, commitmentOf(c))?.lamports ?? 0));
    }
    case 'getTokenAccountBalance': {
      const address = addressParam(params[0]);
      const c = configOf(params[1]);
      const b = contextBlock(node, c);
      const account = node.accountAt(address, commitmentOf(c));
      if (!account) throw rpcErrors.invalidParams('Invalid param: could not find account');
      const token = parseTokenAccount(account);
      if (!token) throw rpcErrors.invalidParams('Invalid param: not a Token account');
      const decimals = node.decimalsOf(token.mint);
      if (decimals === null) throw rpcErrors.invalidParams('Invalid param: could not find mint');
      return withContext(b, uiTokenAmount(token.amount, decimals));
    }
    case 'getTokenAccountsByOwner': {
      const owner = addressParam(params[0]);
      const filter = params[1] as { mint?: string; programId?: string } | undefined;
      const c = configOf(params[2]) as Config & { dataSlice?: { offset: number; length: number } };
      const b = contextBlock(node, c);
      let program: string;
      let mint: string | null = null;
      if (filter && typeof filter.mint === 'string') {
        mint = addressParam(filter.mint);
        const mintAccount = readAccount(node.svm, mint);
        if (!mintAccount || !parseMint(mintAccount)) throw rpcErrors.invalidParams('Invalid param: could not find mint');
        program = mintAccount.owner;
      } else if (filter && typeof filter.programId === 'string') {
        program = addressParam(filter.programId);
        if (program !== TOKEN_PROGRAM && program !== TOKEN_2022_PROGRAM) throw rpcErrors.invalidParams('Invalid param: unrecognized Token program id');
      } else {
        throw rpcErrors.invalidParams('Invalid params: expected a filter {mint} or {programId}');
      }
      const value = [];
      for (const candidate of node.svm.getProgramAccounts(program as never)) {
        const account = node.accountAt(candidate.address, commitmentOf(c));
        const token = parseTokenAccount(account);
        if (!account || !token || token.owner !== owner || (mint && token.mint !== mint)) continue;
        value.push({ account: encodeAccount(node, account, c.encoding ?? 'binary', c.dataSlice), pubkey: candidate.address });
      }
      return withContext(b, value);
    }
    case 'getMinimumBalanceForRentExemption': {
      const size = slotParam(params[0] ?? 0, 'data length');
      return node.svm.minimumBalanceForRentExemption(BigInt(size));
    }
    case 'sendTransaction': {
      const c = configOf(params[1]) as Config & { skipPreflight?: boolean };
      const wire = decodeSubmitted(params[0], c.encoding);
      return node.submit(wire, { skipPreflight: c.skipPreflight === true });
    }
    case 'simulateTransaction': {
      const c = configOf(params[1]) as Config & { sigVerify?: boolean; replaceRecentBlockhash?: boolean };
      const wire = decodeSubmitted(params[0], c.encoding);
      const b = contextBlock(node, { ...c, commitment: c.commitment ?? 'finalized' });
      const tx = decodeWireTransaction(wire);
      if (c.sigVerify && c.replaceRecentBlockhash) throw rpcErrors.invalidParams('sigVerify may not be used with replaceRecentBlockhash');
      if (!c.replaceRecentBlockhash && !node.blockhashValid(tx.blockhash)) {
        return withContext(b, { accounts: null, err: 'BlockhashNotFound', innerInstructions: null, loadedAccountsDataSize: 0, logs: [], replacementBlockhash: null, returnData: null, unitsConsumed: 0 });
      }
      node.svm.withSigverify(c.sigVerify === true);
      let sim;
      try {
        sim = simulate(node.svm, tx);
      } finally {
        node.svm.withSigverify(true);
      }
      const head = node.head;
      return withContext(b, {
        accounts: null,
        err: sim.err,
        innerInstructions: null,
        loadedAccountsDataSize: 0,
        logs: sim.logs,
        replacementBlockhash: c.replaceRecentBlockhash ? { blockhash: head.blockhash, lastValidBlockHeight: head.blockHeight + BLOCKHASH_VALID_BLOCKS } : null,
        returnData: null,
        unitsConsumed: sim.unitsConsumed,
      });
    }
    case 'requestAirdrop': {
      const to = addressParam(params[0]);
      const amount = slotParam(params[1], 'lamports');
      if (!node.faucet) throw new RpcError(-32603, 'Internal error: this node has no faucet');
      const wire = await node.faucet(to, BigInt(amount), node.head.blockhash);
      return node.submit(wire);
    }
    // --- development controls (solana-local only) ---
    case 'solanaLocal_produceSlot': {
      const { count } = (params[0] ?? {}) as { count?: number };
      const n = count ?? 1;
      if (!Number.isInteger(n) || n < 1 || n > 100_000) throw rpcErrors.invalidParams('count must be an integer from 1 to 100000');
      const made = node.produceSlots(n);
      return { slot: made[made.length - 1].slot, blockhash: made[made.length - 1].blockhash, transactions: made.reduce((s, b) => s + b.txs.length, 0) };
    }
    case 'solanaLocal_skipSlots': {
      const { count } = (params[0] ?? {}) as { count?: number };
      if (!Number.isInteger(count) || count! < 1 || count! > 100_000) throw rpcErrors.invalidParams('count must be an integer from 1 to 100000');
      return node.skipSlots(count!);
    }
    case 'solanaLocal_fork': {
      const { blocks, reinclude } = (params[0] ?? {}) as { blocks?: number; reinclude?: boolean };
      if (!Number.isInteger(blocks) || blocks! < 1) throw rpcErrors.invalidParams('blocks must be a positive integer');
      return node.fork(blocks!, reinclude === true);
    }
    case 'solanaLocal_setSlotMs': {
      const { slotMs } = (params[0] ?? {}) as { slotMs?: number };
      node.setSlotMs(slotMs as number);
      return { slotMs: node.slotMs };
    }
    case 'solanaLocal_info':
      return node.info();
    default:
      throw rpcErrors.methodNotFound();
  }
}
