/**
 * `npm run bench:scan:multichain` (also part of `npm run bench:scan`): the EVM scanner with six EVM
 * chains enabled at once (issue 41), against six anvil nodes, Postgres and Redis. ethereum-local is
 * the built-in chain; the five others (one configured like BNB Smart Chain, with 18-decimal USDT and
 * USDC) come from a generated chains file (CHAINS_FILE), read into the registry as the service reads
 * it, their tokens' decimals checked on their chains as at start-up. Pool addresses are EVM
 * addresses, shared by every EVM chain. Prints, for BENCH_MULTICHAIN_BLOCKS (default 1,000) blocks a
 * chain with token transfers, scanned on all six chains at once (as a worker process runs several
 * chains' scan jobs at once): wall time, RPC calls and transfers per chain with 100 and with 100,000
 * pool addresses (BENCH_SCAN_ROUNDS rounds of each, default 3, alternating), and their ratio, the
 * median of the pairs (target ≤ 1.1: the scan's cost is flat in the pool's size).
 * Uses its own database (dropped at the end) and Redis prefix. Not a timed test.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { stringify } from 'yaml';
import { verifyChainsFileTokens } from '../../core/chains/chains-file-tokens';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { ChainRegistry } from '../../core/chains/registry';
import { QUEUES } from '../../core/jobs/catalog';
import { loadConfig } from '../../core/platform/config';
import { createOrganization } from '../../core/organizations/organizations';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { TEST_TOKENS } from '../local-chain/test-tokens';
import { benchContext, benchStore, insertPool, ms, runScanBench } from './scan-support';
import { ETHEREUM_LOCAL_SPEC, latestBlock, mineTransferBlocks, randomEvmAddress, scanWithPoolSizes, startBenchChain, type BenchChain, type BenchChainSpec } from './scan-evm-chains';

const BLOCKS = Number(process.env.BENCH_MULTICHAIN_BLOCKS ?? 1000);
const RECEIVERS_PER_BLOCK = 5;

/** The five chains of the chains file, like the networks issue 41 adds (their real EVM chain ids, block times). */
const FILE_CHAINS: (BenchChainSpec & { name: string; blockTimeMs: number })[] = [
  {
    chainId: 'bsc-local',
    name: 'Local BNB Smart Chain (anvil)',
    evmChainId: 56,
    blockTimeMs: 3000,
    tokens: [
      { currency: 'USDT', name: 'Tether USD (BSC test)', decimals: 18 },
      { currency: 'USDC', name: 'USD Coin (BSC test)', decimals: 18 },
    ],
  },
  { chainId: 'base-local', name: 'Local Base (anvil)', evmChainId: 8453, blockTimeMs: 2000, tokens: [{ currency: 'USDC', name: 'USD Coin (Base test)', decimals: 6 }] },
  { chainId: 'arbitrum-local', name: 'Local Arbitrum One (anvil)', evmChainId: 42161, blockTimeMs: 250, tokens: TEST_TOKENS.slice(0, 2) },
  { chainId: 'optimism-local', name: 'Local OP Mainnet (anvil)', evmChainId: 10, blockTimeMs: 2000, tokens: TEST_TOKENS.slice(0, 2) },
  { chainId: 'avalanche-local', name: 'Local Avalanche C-Chain (anvil)', evmChainId: 43114, blockTimeMs: 2000, tokens: TEST_TOKENS.slice(0, 2) },
];

const store = benchStore('scan6');
const { dbUrl, redisPrefix } = store;

/** The chains file of the five chains, pointing at their anvils and deployed tokens. */
function writeChainsFile(dir: string, nodes: BenchChain[]): string {
  const chains = FILE_CHAINS.map((spec) => {
    const node = nodes.find((n) => n.spec.chainId === spec.chainId)!;
    return {
      chainId: spec.chainId,
      name: spec.name,
      network: 'local',
      evmChainId: spec.evmChainId,
      rpcUrls: [node.anvil.url],
      blockTimeMs: spec.blockTimeMs,
      orderConfirmations: 3,
      finality: { kind: 'depth', blocks: 15 },
      tokens: Object.fromEntries(spec.tokens.map((t) => [t.currency, { address: node.tokens[t.currency], decimals: t.decimals }])),
    };
  });
  const file = path.join(dir, 'chains.yaml');
  fs.writeFileSync(file, stringify({ chains }));
  return file;
}

async function main(): Promise<void> {
  const [load1, load5, load15] = os.loadavg().map((l) => l.toFixed(2));
  process.stdout.write(`Six EVM chains at once (load average ${load1} / ${load5} / ${load15}, ${os.cpus().length} cores)\n`);
  const specs: BenchChainSpec[] = [{ chainId: LOCAL_CHAIN_ID, ...ETHEREUM_LOCAL_SPEC }, ...FILE_CHAINS];
  const started = await Promise.allSettled(specs.map(startBenchChain));
  const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-bench-chains-'));
  const config = loadConfig({ ...process.env, DATABASE_URL: dbUrl, REDIS_PREFIX: redisPrefix, NETWORK: 'local', LOG_LEVEL: 'warn', CHAINS_FILE: path.join(dir, 'chains.yaml') });
  let dbHandle: ReturnType<typeof createDb> | null = null;
  try {
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    writeChainsFile(dir, nodes);
    await runMigrations(dbUrl);
    dbHandle = createDb(dbUrl, { max: 10 });

    // The registry as a process builds it from its configuration (the chains file read and checked),
    // ethereum-local's deployed tokens and port learnt at run time as the local chain's state does.
    const registry = ChainRegistry.forConfig(config, ['evm']);
    const local = nodes.find((n) => n.spec.chainId === LOCAL_CHAIN_ID)!;
    for (const t of TEST_TOKENS) registry.setTokenAddress(LOCAL_CHAIN_ID, t.currency, local.tokens[t.currency], t.decimals);
    registry.setRpcUrls(LOCAL_CHAIN_ID, [local.anvil.url]);
    const ctx = benchContext(config, dbHandle.db, registry);
    await verifyChainsFileTokens(registry, ctx);
    const enabled = registry.enabledChainsOf('evm');
    if (enabled.length !== specs.length) throw new Error(`expected ${specs.length} enabled EVM chains, the registry has ${enabled.map((c) => c.chainId).join(', ')}`);
    for (const c of enabled) {
      const tokens = registry.offeredTokens(c).map((t) => `${t.currency} (${t.decimals})`);
      process.stdout.write(`  ${c.chainId.padEnd(16)} evmChainId ${String(c.evmChainId).padEnd(6)} ${tokens.join(', ')}\n`);
    }

    const { organizationId } = await createOrganization(dbHandle.db, 'Bench org');
    const receivers = Array.from({ length: 100 }, randomEvmAddress);
    await insertPool(ctx, organizationId, 'evm', receivers);
    const outsiders = Array.from({ length: BLOCKS }, randomEvmAddress);

    // Every chain: BLOCKS blocks, each with one transaction emitting 5 transfers to pool addresses
    // (the same 100 on every chain) and 1 elsewhere, the chain's tokens in turn. The chains are made at once.
    const t0 = performance.now();
    const starts = await Promise.all(nodes.map((n) => mineTransferBlocks(n, BLOCKS, receivers, outsiders, RECEIVERS_PER_BLOCK)));
    process.stdout.write(
      `Chains: ${BLOCKS} blocks each with ${BLOCKS * (RECEIVERS_PER_BLOCK + 1)} token transfers (${BLOCKS * RECEIVERS_PER_BLOCK} to pool addresses), ` +
        `${nodes.length * BLOCKS * (RECEIVERS_PER_BLOCK + 1)} in all, mined in ${ms(performance.now() - t0)}\n\n`,
    );
    const targets = nodes.map((n, i) => ({ chain: registry.get(n.spec.chainId)!, from: starts[i] }));
    const heads = await Promise.all(nodes.map(latestBlock));
    process.stdout.write(
      `1) Scanning ${BLOCKS} blocks on each of ${nodes.length} chains at once (${heads.map((h, i) => `${nodes[i].spec.chainId} ${starts[i].number + 1}…${h.number}`).join(', ')}; ` +
        `one worker process runs ${QUEUES['chain-scan'].concurrency} chain-scan jobs at once):\n`,
    );
    const { small, large } = await scanWithPoolSizes(ctx, organizationId, targets, BLOCKS * RECEIVERS_PER_BLOCK, receivers.length);
    const per1000 = (wall: number) => ms((wall * 1000) / BLOCKS);
    const callsPerChain = (round: typeof small) => (round.chains.reduce((n, c) => n + c.calls, 0) / round.chains.length).toFixed(1);
    process.stdout.write(
      `  per 1,000 blocks a chain, six chains at once: ${per1000(small.wall)} wall with 100 pool addresses, ${per1000(large.wall)} with 100,000; ` +
        `RPC calls a chain for its ${BLOCKS} blocks: ${callsPerChain(small)} and ${callsPerChain(large)}\n`,
    );
  } finally {
    await dbHandle?.close();
    await Promise.all(nodes.map((n) => n.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
    await store.drop(config.redisUrl, redisPrefix);
  }
}

runScanBench('evm', main);
