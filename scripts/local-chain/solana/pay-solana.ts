import { getBase58Encoder } from '@solana/kit';
import { SolanaLocalClient } from './payer';
import { readSolanaLocalInfo, SOLANA_TEST_CURRENCIES, type SolanaTestCurrency } from './wallet';

/**
 * `npm run pay` on solana-local: pays an owner (wallet) address from the chain's funded payer,
 * found through `<DATA_DIR>/solana-local/info.json` (written by the running chain), so any process
 * can pay without the registry. An order id (`ord_…`) needs the order's address and currency: the
 * caller resolves it and passes the owner here.
 */

export class SolanaPayError extends Error {}

/** A base58 string of exactly 32 bytes (a Tron T-address decodes to 25: never confused). */
export function isSolanaAddress(text: string): boolean {
  if (!/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(text)) return false;
  try {
    return getBase58Encoder().encode(text).length === 32;
  } catch {
    return false;
  }
}

export interface SolanaPayResult {
  to: string;
  currency: SolanaTestCurrency;
  signature: string;
  slot: number;
  from: string;
  tokenAccount: string;
  createdTokenAccount: boolean;
}

export async function paySolana(args: { dataDir: string; to: string; units: bigint; currency: string }): Promise<SolanaPayResult> {
  const currency = args.currency.toUpperCase() as SolanaTestCurrency;
  if (!SOLANA_TEST_CURRENCIES.includes(currency)) throw new SolanaPayError(`solana-local has test ${SOLANA_TEST_CURRENCIES.join(' and ')} only, not ${args.currency}`);
  const info = readSolanaLocalInfo(args.dataDir);
  if (!info?.rpcUrl) throw new SolanaPayError(`solana-local has never run with DATA_DIR ${args.dataDir}: start it first`);
  const client = await SolanaLocalClient.fromDataDir(info.rpcUrl, args.dataDir);
  if (!client) throw new SolanaPayError(`solana-local's keys are missing under ${args.dataDir}`);
  try {
    await client.rpc.getHealth().send();
  } catch {
    throw new SolanaPayError(`solana-local does not answer at ${info.rpcUrl}: start it first`);
  }
  let paid;
  try {
    paid = await client.pay(args.to, args.units, currency);
  } catch (err) {
    throw new SolanaPayError(`solana-local refused the transfer: ${(err as Error).message}`);
  }
  if (paid.err) throw new SolanaPayError(`the transfer ${paid.signature} failed on chain: ${JSON.stringify(paid.err, (_k, v) => (typeof v === 'bigint' ? Number(v) : v))}`);
  return { to: args.to, currency, signature: paid.signature, slot: paid.slot!, from: paid.from, tokenAccount: paid.tokenAccount, createdTokenAccount: paid.createdTokenAccount };
}
