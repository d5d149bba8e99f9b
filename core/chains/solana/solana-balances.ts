/**
 * Credits of one Solana transaction, by token balance change matched by owner (issue 27): per
 * token account of a successful transaction (`meta.err` null), `post − pre` of
 * `meta.postTokenBalances` / `meta.preTokenBalances` (a missing pre entry is 0) as integer strings
 * in base units, for a configured mint under an allowed token program; only increases count (an
 * owner that sends is not paid). `uiAmount` is never read. A Token-2022 transfer fee is therefore
 * already taken off: what arrived is what is credited.
 *
 * Identity: (signature, index of the recipient token account in the transaction's account list),
 * the list being the static keys followed by the loaded writable and readonly keys of a v0
 * transaction — the `accountIndex` the balances carry. `from`: the owner whose balance of that
 * mint fell the most in the transaction, else the fee payer.
 *
 * Works on the JSON-encoded transaction as the validator returns it, with numbers as JSON
 * numbers or as the bigints `@solana/kit` turns them into.
 */

/** SPL Token and Token-2022: the programs whose token accounts can be credited. */
export const TOKEN_PROGRAM_ID = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM_ID = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
export const TOKEN_PROGRAMS: readonly string[] = [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID];

type Num = number | bigint;

export interface RpcTokenBalance {
  accountIndex: Num;
  mint: string;
  owner?: string;
  programId?: string;
  uiTokenAmount: { amount: string; decimals?: Num };
}

/** A transaction as `getBlock` / `getTransaction` return it with `encoding: 'json'`. */
export interface RpcTransaction {
  meta: {
    err: unknown;
    preTokenBalances?: readonly RpcTokenBalance[] | null;
    postTokenBalances?: readonly RpcTokenBalance[] | null;
    loadedAddresses?: { writable: readonly string[]; readonly: readonly string[] } | null;
  } | null;
  transaction: { signatures: readonly string[]; message: { accountKeys: readonly (string | { pubkey: string })[] } };
}

/** A credit found in one transaction, before the block's facts are added. */
export interface SolanaCredit {
  signature: string;
  /** Index of the recipient token account in the transaction's account list (identity). */
  accountIndex: number;
  /** The recipient token account. */
  tokenAccount: string;
  /** The token account's owner: what the pool holds and the core matches. */
  owner: string;
  mint: string;
  amount: bigint;
  from: string;
}

/** Static keys, then loaded writable, then loaded readonly (v0): what `accountIndex` indexes. */
export function accountKeysOf(tx: RpcTransaction): string[] {
  const keys = tx.transaction.message.accountKeys.map((k) => (typeof k === 'string' ? k : k.pubkey));
  const loaded = tx.meta?.loadedAddresses;
  return loaded ? [...keys, ...loaded.writable, ...loaded.readonly] : keys;
}

const units = (b: RpcTokenBalance): bigint => BigInt(b.uiTokenAmount.amount);

/**
 * The increases of configured mints' token accounts in one transaction. `mints` are the configured
 * mints; `programs` the token programs allowed (both by default).
 */
export function creditsOf(tx: RpcTransaction, mints: ReadonlySet<string>, programs: readonly string[] = TOKEN_PROGRAMS): SolanaCredit[] {
  const meta = tx.meta;
  if (!meta || meta.err !== null && meta.err !== undefined) return [];
  const post = meta.postTokenBalances ?? [];
  if (post.length === 0) return [];
  const pre = new Map<number, RpcTokenBalance>();
  for (const b of meta.preTokenBalances ?? []) pre.set(Number(b.accountIndex), b);
  const keys = accountKeysOf(tx);
  const signature = tx.transaction.signatures[0];

  const out: SolanaCredit[] = [];
  for (const after of post) {
    if (!mints.has(after.mint) || !after.owner) continue;
    if (after.programId !== undefined && !programs.includes(after.programId)) continue;
    const index = Number(after.accountIndex);
    const before = pre.get(index);
    // The same account under another mint before (closed and re-created): its previous balance is not this mint's.
    const previous = before && before.mint === after.mint ? units(before) : 0n;
    const amount = units(after) - previous;
    if (amount <= 0n) continue;
    out.push({ signature, accountIndex: index, tokenAccount: keys[index] ?? '', owner: after.owner, mint: after.mint, amount, from: payerOf(tx, after.mint, keys) });
  }
  return out;
}

/** The owner whose balance of `mint` fell the most in the transaction; else the fee payer. */
function payerOf(tx: RpcTransaction, mint: string, keys: string[]): string {
  const change = new Map<string, bigint>();
  const add = (b: RpcTokenBalance, sign: 1n | -1n) => {
    if (b.mint !== mint || !b.owner) return;
    change.set(b.owner, (change.get(b.owner) ?? 0n) + sign * units(b));
  };
  for (const b of tx.meta?.postTokenBalances ?? []) add(b, 1n);
  for (const b of tx.meta?.preTokenBalances ?? []) add(b, -1n);
  let best: string | null = null;
  let fell = 0n;
  for (const [owner, delta] of change) {
    if (delta < fell) {
      fell = delta;
      best = owner;
    }
  }
  return best ?? keys[0] ?? '';
}
