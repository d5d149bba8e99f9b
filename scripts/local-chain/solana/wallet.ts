import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  appendTransactionMessageInstructions,
  createKeyPairSignerFromPrivateKeyBytes,
  createTransactionMessage,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Blockhash,
  type Instruction,
  type KeyPairSigner,
} from '@solana/kit';
import { fromBase58, toBase58 } from './wire';

/**
 * solana-local's keys and test mints, under `<DATA_DIR>/solana-local/`: `keys.json` holds the
 * 32-byte private keys of the faucet (requestAirdrop), the funded payer (`npm run pay`) and the
 * test mints' authority, generated at the chain's first start and never committed; `info.json`
 * holds the public facts (genesis hash, the USDC and USDT mint addresses, the payer's address) for
 * any other process to read, as the EVM test tokens' addresses are.
 */

export const TEST_MINT_DECIMALS = 6;
export type SolanaTestCurrency = 'USDC' | 'USDT';
export const SOLANA_TEST_CURRENCIES: SolanaTestCurrency[] = ['USDC', 'USDT'];

export interface SolanaLocalKeys {
  faucet: string;
  payer: string;
  mintAuthority: string;
}

export interface SolanaLocalInfo {
  genesisHash: string;
  /** Where the chain listened when last started (read by `npm run pay` in another process). */
  rpcUrl?: string;
  mints: Record<SolanaTestCurrency, string>;
  decimals: number;
  payer: string;
  faucet: string;
  mintAuthority: string;
}

export interface SolanaLocalWallet {
  faucet: KeyPairSigner;
  payer: KeyPairSigner;
  mintAuthority: KeyPairSigner;
}

export const solanaLocalDir = (dataDir: string): string => path.join(dataDir, 'solana-local');
const keysFile = (dir: string) => path.join(dir, 'keys.json');
const infoFile = (dir: string) => path.join(dir, 'info.json');

const newKey = (): string => toBase58(randomBytes(32));

export async function signerFromKey(key: string): Promise<KeyPairSigner> {
  return createKeyPairSignerFromPrivateKeyBytes(fromBase58(key));
}

/** A fresh signer whose key is kept nowhere (throwaway accounts: mints, token accounts). */
export async function throwawaySigner(): Promise<KeyPairSigner> {
  return createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
}

/** Loads the keys, or makes and stores them (mode 0600) when `create`; none in memory-only mode (dir null). */
export function loadOrCreateKeys(dir: string | null): SolanaLocalKeys {
  if (dir && fs.existsSync(keysFile(dir))) return JSON.parse(fs.readFileSync(keysFile(dir), 'utf8')) as SolanaLocalKeys;
  const keys = { faucet: newKey(), payer: newKey(), mintAuthority: newKey() };
  if (dir) {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(keysFile(dir), JSON.stringify(keys), { mode: 0o600 });
  }
  return keys;
}

export async function walletFromKeys(keys: SolanaLocalKeys): Promise<SolanaLocalWallet> {
  return { faucet: await signerFromKey(keys.faucet), payer: await signerFromKey(keys.payer), mintAuthority: await signerFromKey(keys.mintAuthority) };
}

export function readSolanaLocalInfo(dataDir: string): SolanaLocalInfo | null {
  const file = infoFile(solanaLocalDir(dataDir));
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as SolanaLocalInfo) : null;
}

export function writeInfo(dir: string | null, info: SolanaLocalInfo): void {
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(`${infoFile(dir)}.tmp`, JSON.stringify(info, null, 2));
  fs.renameSync(`${infoFile(dir)}.tmp`, infoFile(dir));
}

export function readInfoIn(dir: string | null): SolanaLocalInfo | null {
  return dir && fs.existsSync(infoFile(dir)) ? (JSON.parse(fs.readFileSync(infoFile(dir), 'utf8')) as SolanaLocalInfo) : null;
}

/** The wallet of a solana-local chain started with this DATA_DIR (for `npm run pay` in another process). */
export async function loadSolanaLocalWallet(dataDir: string): Promise<{ wallet: SolanaLocalWallet; info: SolanaLocalInfo } | null> {
  const dir = solanaLocalDir(dataDir);
  const info = readInfoIn(dir);
  if (!info || !fs.existsSync(keysFile(dir))) return null;
  return { wallet: await walletFromKeys(loadOrCreateKeys(dir)), info };
}

/** A signed wire transaction (v0 unless `legacy`) paid by `feePayer`. */
export async function signedWire(
  feePayer: KeyPairSigner,
  instructions: Instruction[],
  blockhash: string,
  lastValidBlockHeight: bigint,
  options: { legacy?: boolean } = {},
): Promise<Uint8Array> {
  const message = pipe(
    createTransactionMessage({ version: options.legacy ? 'legacy' : 0 }),
    (m) => setTransactionMessageFeePayerSigner(feePayer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: blockhash as Blockhash, lastValidBlockHeight }, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const signed = await signTransactionMessageWithSigners(message);
  return new Uint8Array(getTransactionEncoder().encode(signed));
}
