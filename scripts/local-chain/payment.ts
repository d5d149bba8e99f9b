import { eq } from 'drizzle-orm';
import { Contract, getAddress } from 'ethers';
import { orders } from '../../db/schema';
import { parseAmount } from '../../core/platform/amounts';
import type { ServiceContext } from '../../core/service/context';
import type { Currency } from '../../core/chains/registry';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { TRON_LOCAL_CHAIN_ID } from '../../core/chains/tron/tron-local-state';
import { SOLANA_LOCAL_CHAIN_ID } from '../../core/chains/solana/solana-local-state';
import { normalizeTronAddress } from '../../core/chains/tron/tron-address';
import { checkSolanaAddress } from '../../core/chains/solana/solana-address';
import { localProvider } from './local-provider';
import { TEST_TOKEN_ABI } from './test-tokens';

/**
 * `npm run pay`: a test payment on the local chain from one of anvil's funded dev accounts (taken
 * from the node itself, no key in our code): mints the test token to the payer, then transfers it.
 */
export class PayError extends Error {}

/** What a payment reads: the orders table, the registry (local chains' URLs and tokens), DATA_DIR. */
export type PayDeps = Pick<ServiceContext, 'db' | 'registry' | 'config'>;

export interface PaymentResult {
  to: string;
  currency: Currency;
  amount: string;
  txHash: string;
  blockNumber: number;
  from: string;
}

export async function payOnLocalChain(
  ctx: PayDeps,
  target: string,
  amountText: string,
  currencyArg?: string,
  options: { force?: boolean } = {},
): Promise<PaymentResult> {
  if (checkSolanaAddress(target).ok) return payOnSolanaLocal(ctx, target, amountText, currencyArg);
  const solanaOrder = await solanaOrderOf(ctx, target);
  if (solanaOrder) {
    refuseFinishedOrder(target, solanaOrder.status, options);
    if (currencyArg && currencyArg.toUpperCase() !== solanaOrder.currency) {
      process.stderr.write(`note: order ${target} is in ${solanaOrder.currency}; paying ${currencyArg.toUpperCase()} as asked\n`);
    }
    return payOnSolanaLocal(ctx, solanaOrder.address, amountText, currencyArg ?? solanaOrder.currency);
  }
  if (await isTronTarget(ctx, target)) return payOnTronLocal(ctx, target, amountText, currencyArg, options);
  // An order pays on its own chain: ethereum-local, or an EVM chain of the chains file (CHAINS_FILE)
  // that runs the test token; a bare address pays on ethereum-local.
  let chainId = LOCAL_CHAIN_ID;
  let to: string;
  let currency: Currency;
  if (/^ord_/.test(target)) {
    const order = await orderTarget(ctx, target);
    if (!order) throw new PayError(`order ${target} not found`);
    const orderChain = ctx.registry.get(order.chainId);
    if (orderChain?.protocol !== 'evm') throw new PayError(`order ${target} is on ${order.chainId}, not a local EVM chain (${localEvmChains(ctx).join(', ')})`);
    chainId = order.chainId;
    refuseFinishedOrder(target, order.status, options);
    if (currencyArg && currencyArg.toUpperCase() !== order.currency) {
      // Allowed on purpose (wrong-token payments are a case to try), but said out loud.
      process.stderr.write(`note: order ${target} is in ${order.currency}; paying ${currencyArg.toUpperCase()} as asked\n`);
    }
    to = order.address;
    currency = currencyArg?.toUpperCase() ?? order.currency;
  } else if (/^0x[0-9a-fA-F]{40}$/.test(target)) {
    try {
      to = getAddress(target);
    } catch {
      throw new PayError(`${target} is not a valid address (bad checksum)`);
    }
    currency = currencyArg?.toUpperCase() ?? 'USDT';
  } else {
    throw new PayError(`"${target}" is neither an order id (ord_…), an EVM address (0x…), a Tron address (T…) nor a Solana address`);
  }
  const chain = ctx.registry.get(chainId);
  if (!chain) throw new PayError(`${chainId} is not configured (NETWORK must be local)`);
  const token = chain.tokens[currency];
  if (!token) throw new PayError(`${chain.chainId} has no ${currency} token (it has ${Object.keys(chain.tokens).join(', ') || 'none'})`);
  if (!token.address) throw new PayError(`${currency} is not deployed on ${chain.chainId}: is it running (npm start / npm run chain)?`);
  const units = baseUnits(amountText, token.decimals);
  const rpcUrl = chain.rpcUrls[0];
  const provider = localProvider(rpcUrl);
  try {
    let accounts: string[];
    try {
      accounts = await provider.send('eth_accounts', []);
    } catch {
      throw new PayError(`${chain.chainId} does not answer at ${rpcUrl}: start it (ethereum-local: npm start or npm run chain)`);
    }
    if (accounts.length < 2) throw new PayError('the local chain has no funded dev account');
    const payer = await provider.getSigner(accounts[1]);
    const contract = new Contract(token.address, TEST_TOKEN_ABI, payer);
    const mint = await contract.mint(await payer.getAddress(), units);
    const transfer = await contract.transfer(to, units, { nonce: mint.nonce + 1 });
    const receipt = await transfer.wait(1, 30_000);
    if (!receipt || receipt.status !== 1) throw new PayError(`the transfer ${transfer.hash} failed on chain`);
    return { to, currency, amount: amountText, txHash: transfer.hash, blockNumber: receipt.blockNumber, from: await payer.getAddress() };
  } finally {
    provider.destroy();
  }
}

/** The EVM chains of this (local) registry: ethereum-local and the chains file's. */
function localEvmChains(ctx: PayDeps): string[] {
  return ctx.registry.list().filter((c) => c.protocol === 'evm').map((c) => c.chainId);
}

/**
 * A completed or expired order's address has gone back to the pool (cooldown): the money would not
 * count toward the order but be recorded unattributed, or credited to whoever holds the address next.
 */
function refuseFinishedOrder(orderId: string, status: string, options: { force?: boolean }): void {
  if ((status === 'completed' || status === 'expired') && !options.force) {
    throw new PayError(
      `order ${orderId} is ${status}: a payment now would not count toward it (it would land unattributed, or with the address's next holder). Pass --force to send it anyway.`,
    );
  }
}

/** A T… address, or an order on tron-local. */
async function isTronTarget(ctx: PayDeps, target: string): Promise<boolean> {
  if (/^T[1-9A-HJ-NP-Za-km-z]{33}$/.test(target)) return true;
  if (!/^ord_/.test(target)) return false;
  const [order] = await ctx.db.select({ chainId: orders.chainId }).from(orders).where(eq(orders.id, target));
  return order?.chainId === TRON_LOCAL_CHAIN_ID;
}

/** An order on solana-local (its address and currency), or null. */
async function solanaOrderOf(ctx: PayDeps, target: string): Promise<{ address: string; currency: string; status: string } | null> {
  if (!/^ord_/.test(target)) return null;
  const order = await orderTarget(ctx, target);
  return order?.chainId === SOLANA_LOCAL_CHAIN_ID ? order : null;
}

/**
 * Where an order is paid: its address, token and chain (a USD order: its current route's, and one
 * with no route chosen yet is refused with what to do). Null: no such order.
 */
async function orderTarget(ctx: PayDeps, orderId: string): Promise<{ address: string; currency: string; chainId: string; status: string } | null> {
  const [order] = await ctx.db
    .select({ address: orders.address, currency: orders.currency, routeCurrency: orders.routeCurrency, chainId: orders.chainId, status: orders.status })
    .from(orders)
    .where(eq(orders.id, orderId));
  if (!order) return null;
  if (order.address === null || order.chainId === null) {
    throw new PayError(`order ${orderId} is priced in USD and its payer has not chosen a route yet: choose one on its payment page or with POST /api/v1/orders/${orderId}/route`);
  }
  return { address: order.address, currency: order.routeCurrency ?? order.currency, chainId: order.chainId, status: order.status };
}

/** A test payment on tron-local: its faucet sends the test USDT (a dev-only endpoint of the node). */
async function payOnTronLocal(ctx: PayDeps, target: string, amountText: string, currencyArg: string | undefined, options: { force?: boolean }): Promise<PaymentResult> {
  const chain = ctx.registry.get(TRON_LOCAL_CHAIN_ID);
  if (!chain) throw new PayError('tron-local is not configured (NETWORK must be local)');
  let to = target;
  if (/^ord_/.test(target)) {
    const order = await orderTarget(ctx, target);
    if (!order) throw new PayError(`order ${target} not found`);
    refuseFinishedOrder(target, order.status, options);
    to = order.address;
  } else if (!normalizeTronAddress(target)) {
    throw new PayError(`${target} is not a valid Tron address (bad checksum)`);
  }
  const currency = (currencyArg?.toUpperCase() ?? 'USDT') as Currency;
  const token = chain.tokens[currency];
  if (!token?.address) throw new PayError(`${currency} is not available on tron-local (it holds a test USDT only)`);
  const units = baseUnits(amountText, token.decimals);
  const rpcUrl = chain.rpcUrls[0];
  let answer: { txID?: string; blockNumber?: number; success?: boolean; Error?: string };
  try {
    const res = await fetch(`${rpcUrl}/dev/transfer`, { method: 'POST', body: JSON.stringify({ to, amount: units.toString() }) });
    answer = (await res.json()) as typeof answer;
  } catch {
    throw new PayError(`tron-local does not answer at ${rpcUrl}: start it with npm start or npm run chain`);
  }
  if (!answer.txID || answer.Error) throw new PayError(`tron-local refused the transfer: ${answer.Error ?? 'no transaction id'}`);
  if (!answer.success) throw new PayError(`the transfer ${answer.txID} failed on chain`);
  const info = (await (await fetch(`${rpcUrl}/dev/info`, { method: 'POST' })).json()) as { faucet: string };
  return { to, currency, amount: amountText, txHash: answer.txID, blockNumber: answer.blockNumber ?? 0, from: info.faucet };
}

/**
 * A test payment on solana-local: transferChecked from its funded payer to the owner's associated
 * token account (created in the same transaction when needed). The chain's URL and keys come from
 * DATA_DIR (solana-local writes them there), not from the registry.
 */
async function payOnSolanaLocal(ctx: PayDeps, to: string, amountText: string, currencyArg: string | undefined): Promise<PaymentResult> {
  // Loaded only for a Solana payment: @solana/kit is a large part of pay's start-up otherwise.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { paySolana, SolanaPayError } = require('./solana/pay-solana') as typeof import('./solana/pay-solana');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { TEST_MINT_DECIMALS } = require('./solana/wallet') as typeof import('./solana/wallet');
  const units = baseUnits(amountText, TEST_MINT_DECIMALS);
  try {
    const paid = await paySolana({ dataDir: ctx.config.dataDir, to, units, currency: currencyArg ?? 'USDT' });
    return { to, currency: paid.currency, amount: amountText, txHash: paid.signature, blockNumber: paid.slot, from: paid.from };
  } catch (err) {
    if (err instanceof SolanaPayError) throw new PayError(err.message);
    throw err;
  }
}

function baseUnits(amountText: string, decimals: number): bigint {
  try {
    return parseAmount(amountText, decimals);
  } catch (err) {
    throw new PayError(`invalid amount "${amountText}": ${(err as Error).message}`);
  }
}
