import { startTcpProxy, type TcpProxy } from './processes';
import { Contract, FetchRequest, JsonRpcProvider, Network, type JsonRpcSigner } from 'ethers';
import { startAnvil, type RunningAnvil } from '../../scripts/local-chain/anvil';
import { deployTestTokens, TEST_TOKEN_ABI, TEST_TOKENS, type TestTokenSpec } from '../../scripts/local-chain/test-tokens';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { initCheckpoint } from '../../core/detection/scan-position';
import { recordHeadObservation } from '../../core/detection/head-observations';
import type { ChainRegistry, Currency } from '../../core/chains/registry';
import type { ServiceContext } from '../../core/service/context';
import { deleteCheckpoint } from '../../core/chains/checkpoints';
import { chainHeadObservations, scannedBlocks } from '../../db/schema';
import { eq } from 'drizzle-orm';

/**
 * A local EVM chain for the tests: anvil (port 0, mining on demand) with USDT/USDC/DAI test
 * tokens compiled and deployed at test time. Stop it in `after`.
 */
export interface TestChain {
  anvil: RunningAnvil;
  url: string;
  provider: JsonRpcProvider;
  tokens: Record<Currency, string>;
  payer: JsonRpcSigner;
  /** Mines n blocks at once (same timestamp, so block time never runs ahead of the clock). */
  mine(n?: number): Promise<void>;
  head(): Promise<number>;
  /** Mints `units` to the payer and transfers them to `to`, mined in one block; returns the tx hash and block. */
  pay(to: string, currency: Currency, units: bigint): Promise<{ txHash: string; blockNumber: number; blockHash: string }>;
  /** Mints straight to an address (a Transfer from 0x0) without mining: the next mine() includes it. */
  sendMint(to: string, currency: Currency, units: bigint): Promise<string>;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /**
   * anvil_reorg (same height, new hashes). anvil rewinds its clock to the fork point and keeps that
   * lag, so its clock is set back to the wall clock afterwards (a real chain's time never lags).
   */
  reorg(depth: number, txs?: [string, number][]): Promise<void>;
  stop(): Promise<void>;
}

/** A request to the test chain that takes longer than this is a failure with the method's name, not a silent hang. */
const TEST_RPC_TIMEOUT_MS = 15_000;
/** Starting a chain and deploying its tokens takes about a second; an attempt that takes this long is abandoned. */
const SETUP_ATTEMPT_MS = 30_000;
const SETUP_ATTEMPTS = 3;

/**
 * Starts anvil and deploys the tokens. A CI run once hung in this set-up (a before-all hook ran
 * out its 90 s with no error); each attempt is now bounded, says at which step it stopped, and
 * is retried on a fresh anvil.
 */
export async function startTestChain(options: TestChainOptions = {}): Promise<TestChain> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= SETUP_ATTEMPTS; attempt++) {
    const progress = { step: 'starting anvil', anvil: undefined as RunningAnvil | undefined, provider: undefined as JsonRpcProvider | undefined };
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        setUpTestChain(progress, options),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`test chain set-up took over ${SETUP_ATTEMPT_MS} ms at: ${progress.step}`)), SETUP_ATTEMPT_MS);
        }),
      ]);
    } catch (err) {
      lastError = err;
      process.stderr.write(`test chain set-up attempt ${attempt}/${SETUP_ATTEMPTS} failed at "${progress.step}": ${(err as Error).message}\n`);
      progress.provider?.destroy();
      await progress.anvil?.stop().catch(() => undefined);
    } finally {
      clearTimeout(timer);
    }
  }
  throw lastError;
}

/** A second local chain (a chains file's): its EVM chain id and its tokens, instead of anvil's 31337 with USDT, USDC and DAI. */
export interface TestChainOptions {
  evmChainId?: number;
  tokens?: readonly TestTokenSpec[];
}

async function setUpTestChain(progress: { step: string; anvil?: RunningAnvil; provider?: JsonRpcProvider }, options: TestChainOptions): Promise<TestChain> {
  const evmChainId = options.evmChainId ?? 31337;
  const anvil = await startAnvil({ port: 0, ...(evmChainId !== 31337 ? { chainId: evmChainId } : {}) });
  progress.anvil = anvil;
  const network = Network.from(evmChainId);
  const request = new FetchRequest(anvil.url);
  request.timeout = TEST_RPC_TIMEOUT_MS;
  const provider = new JsonRpcProvider(request, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1, pollingInterval: 50 });
  progress.provider = provider;
  progress.step = 'eth_accounts';
  const accounts: string[] = await provider.send('eth_accounts', []);
  progress.step = 'deploying the test tokens';
  const tokens = await deployTestTokens(await provider.getSigner(accounts[0]), options.tokens);
  // From here on blocks are mined only when a test asks.
  progress.step = 'evm_setAutomine false';
  await provider.send('evm_setAutomine', [false]);
  progress.step = 'done';
  const payer = await provider.getSigner(accounts[1]);
  const contracts = Object.fromEntries(Object.entries(tokens).map(([c, a]) => [c, new Contract(a, TEST_TOKEN_ABI, payer)])) as Record<Currency, Contract>;
  // The pending count is read for every send: reorgs give nonces back.
  const nextNonce = () => provider.getTransactionCount(accounts[1], 'pending');
  const chain: TestChain = {
    anvil,
    url: anvil.url,
    provider,
    tokens,
    payer,
    async mine(n = 1) {
      await provider.send('anvil_mine', [`0x${n.toString(16)}`, '0x0']);
    },
    async head() {
      return Number(await provider.send('eth_blockNumber', []));
    },
    async sendMint(to, currency, units) {
      const tx = await contracts[currency].mint(to, units, { nonce: await nextNonce(), gasLimit: 200_000 });
      return tx.hash as string;
    },
    async pay(to, currency, units) {
      const n = await nextNonce();
      await contracts[currency].mint(accounts[1], units, { nonce: n, gasLimit: 200_000 });
      const tx = await contracts[currency].transfer(to, units, { nonce: n + 1, gasLimit: 200_000 });
      await chain.mine(1);
      const receipt = await provider.getTransactionReceipt(tx.hash);
      if (!receipt || receipt.status !== 1) throw new Error(`test payment ${tx.hash} failed`);
      return { txHash: tx.hash, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash };
    },
    rpc: (method, params = []) => provider.send(method, params),
    async reorg(depth, txs = []) {
      await provider.send('anvil_reorg', [depth, txs]);
      await provider.send('evm_setTime', [Math.floor(Date.now() / 1000)]);
    },
    async stop() {
      provider.destroy();
      await anvil.stop();
    },
  };
  return chain;
}

/** Points a registry's ethereum-local at a test chain. */
export function useTestChain(registry: ChainRegistry, chain: TestChain, rpcUrls: string[] = [chain.url]): void {
  for (const t of TEST_TOKENS) registry.setTokenAddress(LOCAL_CHAIN_ID, t.currency, chain.tokens[t.currency], t.decimals);
  registry.setRpcUrls(LOCAL_CHAIN_ID, rpcUrls);
}

/** Starts the run database's checkpoint of `chainId` (ethereum-local unless told) at the chain's current head. */
export async function resetCheckpointToHead(ctx: ServiceContext, chain: TestChain, chainId: string = LOCAL_CHAIN_ID): Promise<number> {
  const askedAt = ctx.clock.now();
  const head = await chain.provider.send('eth_getBlockByNumber', ['latest', false]);
  // A fresh start of the scan: what was seen of the chain before (by a context with another clock) is forgotten,
  // and the head found is what the service has seen of it, as the scanner would have recorded.
  await ctx.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, chainId));
  await recordHeadObservation(ctx.db, { chainId, head: Number(head.number), askedAt, answeredAt: ctx.clock.now(), hash: head.hash });
  await ctx.db.transaction(async (tx) => {
    await deleteCheckpoint(tx, chainId);
    await tx.delete(scannedBlocks).where(eq(scannedBlocks.chainId, chainId));
    await initCheckpoint(tx, chainId, { number: Number(head.number), hash: head.hash, parentHash: head.parentHash, timestamp: Number(head.timestamp) });
  });
  return Number(head.number);
}

/** A TCP proxy in front of the chain that the test can stop and start again (test/helpers/processes.ts). */
export type RpcProxy = TcpProxy;
export const startRpcProxy = startTcpProxy;
