import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { getAddress, hexlify, JsonRpcProvider, Network, type JsonRpcSigner } from 'ethers';
import type { BlockRef } from '../../core/chains/adapter-contract';
import type { Chain, Currency } from '../../core/chains/registry';
import { EvmAdapter } from '../../core/chains/evm/evm-adapter';
import { EvmRpc } from '../../core/chains/evm/evm-rpc';
import { resetCheckpoint } from '../../core/detection/scan-position';
import { scanChain } from '../../core/detection/scan';
import { DetectionState } from '../../core/service/detection-state';
import type { ServiceContext } from '../../core/service/context';
import { events, poolAddresses, scannedBlocks, transfers } from '../../db/schema';
import { startAnvil, type RunningAnvil } from '../local-chain/anvil';
import { deployTestTokens, TEST_TOKEN_ABI, TEST_TOKENS, type TestTokenSpec } from '../local-chain/test-tokens';
import { insertPool, ms } from './scan-support';

/**
 * The EVM side of the scan benchmarks, shared by scan.ts (ethereum-local alone) and
 * scan-multichain.ts (six EVM chains enabled at once): an anvil with its test tokens, blocks of
 * token transfers, and a scan of one or more chains from a given block, measured.
 */

export const randomEvmAddress = () => getAddress(hexlify(randomBytes(20)));

/**
 * Measured rounds of each pool size (BENCH_SCAN_ROUNDS): on the shared 2-core machine one round's
 * time moved by a third either way with other work around it; the ratio is the median of the pairs.
 */
export const SCAN_ROUNDS = Number(process.env.BENCH_SCAN_ROUNDS ?? 3);

/** A chain to run on anvil: its registry id, EVM chain id and the test tokens deployed on it. */
export interface BenchChainSpec {
  chainId: string;
  evmChainId: number;
  tokens: readonly TestTokenSpec[];
}

export interface BenchChain {
  spec: BenchChainSpec;
  anvil: RunningAnvil;
  provider: JsonRpcProvider;
  /** anvil's first account: deploys the tokens and sends the benchmark's transactions. */
  deployer: string;
  signer: JsonRpcSigner;
  tokens: Record<Currency, string>;
  /** The deployer's next nonce: transactions are sent with it, never asked for (one call fewer each). */
  nonce: number;
  stop(): Promise<void>;
}

/** ethereum-local as the built-in registry has it: anvil's chain id 31337, USDT, USDC (6) and DAI (18). */
export const ETHEREUM_LOCAL_SPEC = { evmChainId: 31337, tokens: TEST_TOKENS } as const;

/** Starts anvil for the chain with automine off (blocks are mined when asked) and deploys its tokens. */
export async function startBenchChain(spec: BenchChainSpec): Promise<BenchChain> {
  // No past states kept: the scanner reads heads, headers and logs only, and anvil with kept states
  // slows down as the chain grows and stalls past about 57,000 blocks (the 100,000-block catch-up).
  const anvil = await startAnvil({ port: 0, historyStates: 0, ...(spec.evmChainId !== 31337 ? { chainId: spec.evmChainId } : {}) });
  const network = Network.from(spec.evmChainId);
  const provider = new JsonRpcProvider(anvil.url, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1, pollingInterval: 50 });
  try {
    const [deployer] = await provider.send('eth_accounts', []);
    const signer = await provider.getSigner(deployer);
    // Automine off before the tokens are sent (deployTestTokens then mines them in one block): with
    // automine on and six anvils starting at once on a loaded machine, a chain's second deployment
    // (nonce 1) stayed queued after its first (nonce 0) was mined, as if its nonce were ahead, and
    // was never mined (the bench waited for it 14 minutes).
    await provider.send('evm_setAutomine', [false]);
    const tokens = await deployTestTokens(signer, spec.tokens);
    const nonce = await provider.getTransactionCount(deployer, 'pending');
    return {
      spec,
      anvil,
      provider,
      deployer,
      signer,
      tokens,
      nonce,
      async stop() {
        provider.destroy();
        await anvil.stop();
      },
    };
  } catch (err) {
    provider.destroy();
    await anvil.stop();
    throw err;
  }
}

/** Sends one mintMany of `units` to each of `to` in the chain's token, as is (no fee or gas look-ups); mined by the next anvil_mine. */
export async function sendMintMany(chain: BenchChain, currency: Currency, to: string[], units: bigint): Promise<void> {
  const data = TEST_TOKEN_ABI.encodeFunctionData('mintMany', [to, units]);
  await chain.provider.send('eth_sendTransaction', [{ from: chain.deployer, to: chain.tokens[currency], data, gas: '0x7a120', nonce: `0x${(chain.nonce++).toString(16)}` }]);
}

export async function mine(chain: BenchChain, blocks = 1): Promise<void> {
  await chain.provider.send('anvil_mine', [`0x${blocks.toString(16)}`, '0x0']);
}

export async function latestBlock(chain: BenchChain): Promise<BlockRef> {
  const h = await chain.provider.send('eth_getBlockByNumber', ['latest', false]);
  return { number: Number(h.number), hash: h.hash, parentHash: h.parentHash, timestamp: Number(h.timestamp) };
}

/**
 * `blocks` blocks, each with one transaction emitting a transfer to `perBlock` pool addresses (the
 * receivers in turn) and one to an address outside the pool, the chain's tokens taking turns (one
 * whole unit plus the block's index, in each token's decimals). Returns the block before the first:
 * where a scan of them starts.
 */
export async function mineTransferBlocks(chain: BenchChain, blocks: number, receivers: readonly string[], outsiders: readonly string[], perBlock: number): Promise<BlockRef> {
  const start = await latestBlock(chain);
  for (let b = 0; b < blocks; b++) {
    const token = chain.spec.tokens[b % chain.spec.tokens.length];
    const to = Array.from({ length: perBlock }, (_, i) => receivers[(b * perBlock + i) % receivers.length]);
    to.push(outsiders[b % outsiders.length]);
    await sendMintMany(chain, token.currency, to, 10n ** BigInt(token.decimals) + BigInt(b));
    await mine(chain);
  }
  return start;
}

/** One chain's part of a scan round. */
export interface ChainScanFigures {
  chainId: string;
  ranges: number;
  calls: number;
  transfers: number;
  /** From the round's start to this chain's scan reaching its head. */
  elapsed: number;
}

export interface ScanRound {
  pool: number;
  /** From the round's start to the last chain's scan reaching its head. */
  wall: number;
  /** CPU time of this process (the scanner's Node thread and libuv's) over the round. */
  cpu: number;
  chains: ChainScanFigures[];
}

/**
 * Forgets what earlier rounds recorded on the chains (transfers, their events, scanned blocks),
 * puts their checkpoints back at their `from` blocks and vacuums: every round starts from tables in
 * the same state. Without the vacuum a later round (the large pool's) inserts among the dead rows
 * of the earlier rounds' transfers, events and counts.
 */
async function forgetRounds(ctx: ServiceContext, targets: { chain: Chain; from: BlockRef }[]): Promise<void> {
  const ids = targets.map((t) => t.chain.chainId);
  await ctx.db.delete(transfers).where(inArray(transfers.chainId, ids));
  await ctx.db.delete(events).where(and(eq(events.type, 'transfer.unattributed'), inArray(sql`${events.data}->>'chainId'`, ids)));
  await ctx.db.delete(scannedBlocks).where(inArray(scannedBlocks.chainId, ids));
  for (const { chain, from } of targets) await ctx.db.transaction((tx) => resetCheckpoint(tx, chain.chainId, from));
  await ctx.db.execute(sql`vacuum analyze`);
}

/**
 * Scans each chain from its `from` block to its head, all of them at once (as a worker process runs
 * several chains' scan jobs at once), each with its own RPC client counting its calls, after
 * forgetting what an earlier round recorded on them (forgetRounds). Each chain must record
 * `expected` transfers.
 */
export async function scanChainsAtOnce(ctx: ServiceContext, targets: { chain: Chain; from: BlockRef }[], expected: number): Promise<ScanRound> {
  const ids = targets.map((t) => t.chain.chainId);
  await forgetRounds(ctx, targets);
  // A fresh detection state: every chain starts from the initial range size.
  ctx.detection = new DetectionState();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const runs = await Promise.all(
    targets.map(async ({ chain }) => {
      const rpc = new EvmRpc(chain);
      try {
        const run = await scanChain(ctx, new EvmAdapter(chain, rpc), 600_000);
        return { chainId: chain.chainId, ranges: run.ranges, calls: rpc.calls, elapsed: performance.now() - started };
      } finally {
        rpc.destroy();
      }
    }),
  );
  const wall = performance.now() - started;
  const cpuUsed = process.cpuUsage(cpuBefore);
  const cpu = (cpuUsed.user + cpuUsed.system) / 1000;
  const counts = await ctx.db
    .select({ chainId: transfers.chainId, n: sql<number>`count(*)::int` })
    .from(transfers)
    .where(inArray(transfers.chainId, ids))
    .groupBy(transfers.chainId);
  const [{ pool }] = await ctx.db.select({ pool: sql<number>`count(*)::int` }).from(poolAddresses);
  const chains = runs.map((r) => ({ ...r, transfers: counts.find((c) => c.chainId === r.chainId)?.n ?? 0 }));
  const short = chains.filter((c) => c.transfers !== expected);
  if (short.length > 0) throw new Error(`expected ${expected} transfers a chain, recorded ${short.map((c) => `${c.transfers} on ${c.chainId}`).join(', ')}`);
  return { pool, wall, cpu, chains };
}

const sum = (chains: ChainScanFigures[], key: 'ranges' | 'calls' | 'transfers') => chains.reduce((n, c) => n + c[key], 0);

/** A round's line (the totals, and the wall time); with `perChain` and several chains, a line for each chain. */
export function reportRound(label: string, round: ScanRound, perChain = true): string {
  const { chains } = round;
  let out = `  ${label.padEnd(26)} pool ${String(round.pool).padStart(6)}  ranges ${sum(chains, 'ranges')}  RPC calls ${sum(chains, 'calls')}  transfers ${sum(chains, 'transfers')}  scan ${ms(round.wall)} (Node CPU ${ms(round.cpu)})\n`;
  if (perChain && chains.length > 1) {
    for (const c of chains) out += `    ${c.chainId.padEnd(24)} ranges ${c.ranges}  RPC calls ${String(c.calls).padStart(3)}  transfers ${c.transfers}  done after ${ms(c.elapsed)}\n`;
  }
  return out;
}

const ratio = (a: number, b: number) => (a / b).toFixed(2);
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return Number.isInteger(mid) ? (sorted[mid - 1] + sorted[mid]) / 2 : sorted[Math.floor(mid)];
};

/**
 * The ratio of the large pool's rounds to the small pool's, RPC calls and wall time (with several
 * chains also each chain's time): each large round over the small round just before it, the
 * median of those pairs. Pairs keep the ratio meaningful while the shared machine's load drifts.
 */
export function reportRatio(small: ScanRound[], large: ScanRound[]): string {
  const pairs = small.map((s, i) => ({ s, l: large[i] }));
  const calls = median(pairs.map(({ s, l }) => sum(l.chains, 'calls') / sum(s.chains, 'calls')));
  const time = median(pairs.map(({ s, l }) => l.wall / s.wall));
  const listed = pairs.length > 1 ? ` (median of ${pairs.length} pairs: ${pairs.map(({ s, l }) => ratio(l.wall, s.wall)).join(', ')})` : '';
  let out = `  ratio 100,000 / 100: RPC calls ${calls.toFixed(2)}, scan time ${time.toFixed(2)}${listed}  (target ≤ 1.1)\n`;
  if (small[0].chains.length > 1) {
    out += '    per chain (RPC calls, time):';
    for (const { chainId } of small[0].chains) {
      const chainOf = (r: ScanRound) => r.chains.find((c) => c.chainId === chainId)!;
      const chainCalls = median(pairs.map(({ s, l }) => chainOf(l).calls / chainOf(s).calls));
      const chainTime = median(pairs.map(({ s, l }) => chainOf(l).elapsed / chainOf(s).elapsed));
      out += ` ${chainId} ${chainCalls.toFixed(2)}, ${chainTime.toFixed(2)};`;
    }
    out = `${out.slice(0, -1)}\n`;
  }
  return out;
}

/** The round of median wall time, printed with its chains when there were several rounds. */
function medianRound(label: string, rounds: ScanRound[]): ScanRound {
  const middle = [...rounds].sort((a, b) => a.wall - b.wall)[Math.floor((rounds.length - 1) / 2)];
  if (rounds.length > 1) process.stdout.write(reportRound(`${label}, median`, middle));
  return middle;
}

/**
 * Part 1 of the EVM scan benchmarks: the chains' blocks scanned with the pool as it is (`receivers`,
 * 100 addresses; a warm-up round first, not counted), then with the pool filled to 100,000
 * addresses; with `rounds` above 1, pool sizes alternate (100, 100,000, 100, …): the 99,900 added
 * addresses are kept aside in a table of the bench's database and taken out of the pool and put
 * back in one statement each. Prints each round and the ratio of the pairs; returns the median
 * round of each pool size.
 */
export async function scanWithPoolSizes(
  ctx: ServiceContext,
  organizationId: string,
  targets: { chain: Chain; from: BlockRef }[],
  expected: number,
  receivers: number,
  rounds = SCAN_ROUNDS,
): Promise<{ small: ScanRound; large: ScanRound }> {
  process.stdout.write(reportRound('warm-up (not counted)', await scanChainsAtOnce(ctx, targets, expected), rounds === 1));
  const small: ScanRound[] = [];
  const large: ScanRound[] = [];
  const label = (pool: string, i: number) => (rounds > 1 ? `${pool} ${i}/${rounds}` : pool);
  for (let i = 1; i <= rounds; i++) {
    if (i > 1) {
      // The recorded transfers first: each address deleted is checked against transfers.pool_address_id,
      // which no index covers whole (a sequential scan each: the statement ran into the 10-minute timeout).
      await forgetRounds(ctx, targets);
      await ctx.db.execute(sql`delete from pool_addresses where id in (select id from bench_pool_extra)`);
    }
    small.push(await scanChainsAtOnce(ctx, targets, expected));
    process.stdout.write(reportRound(label('100 pool addresses', i), small[i - 1], rounds === 1));
    if (i === 1) {
      const extra = 100_000 - receivers;
      const tFill = performance.now();
      await ctx.db.execute(sql`create table bench_pool_before as select id from pool_addresses`);
      await insertPool(ctx, organizationId, 'evm', Array.from({ length: extra }, randomEvmAddress));
      await ctx.db.execute(sql`create table bench_pool_extra as select * from pool_addresses where id not in (select id from bench_pool_before)`);
      process.stdout.write(`  (added ${extra} more pool addresses in ${ms(performance.now() - tFill)})\n`);
    } else {
      await ctx.db.execute(sql`insert into pool_addresses overriding system value select * from bench_pool_extra`);
    }
    large.push(await scanChainsAtOnce(ctx, targets, expected));
    process.stdout.write(reportRound(label('100,000 pool addresses', i), large[i - 1], rounds === 1));
  }
  const result = { small: medianRound('100 pool addresses', small), large: medianRound('100,000 pool addresses', large) };
  process.stdout.write(reportRatio(small, large));
  return result;
}
