import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import postgres from 'postgres';
import { TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, knownSecrets } from '../helpers/harness';
import { closedPort, spawnEntry, type Spawned } from '../helpers/processes';
import { startTestChain, type TestChain } from '../helpers/anvil';
import { randomEvmAddress } from '../helpers/pool';

/** A database of this file's own for one start (dropped after). */
function startDatabase(suffix: string): { url: string; drop(): Promise<void> } {
  const url = TEST_DATABASE_URL.replace(/\/([^/]+)$/, `/$1_${suffix}`);
  return {
    url,
    async drop() {
      const admin = postgres(TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/postgres'), { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists "${new URL(url).pathname.slice(1)}" with (force)`);
      await admin.end();
    },
  };
}

/** One chain of a chains file: a local EVM chain with one USDT token. */
const fileChain = (chainId: string, evmChainId: number, rpcUrl: string, usdt: string, decimals: number) => `  - chainId: ${chainId}
    name: ${chainId}
    network: local
    evmChainId: ${evmChainId}
    rpcUrls: [${rpcUrl}]
    blockTimeMs: 1000
    orderConfirmations: 2
    finality: { kind: depth, blocks: 2 }
    tokens:
      USDT: { address: "${usdt}", decimals: ${decimals} }
`;

/**
 * `npm start` starts nodes for the built-in local chains only; for the chains file's chains it says
 * on the terminal which node is missing and the command that starts it, or which URL answers as
 * another chain, and is silent about a chain whose node is there.
 */
describe('npm start with a chains file: the added chains whose node is missing or another chain', function () {
  this.timeout(120_000);
  const db = startDatabase('filechains');
  let bsc: TestChain;
  let other: TestChain;
  let p: Spawned | undefined;
  let file: string;
  let missingPort: number;

  before(async () => {
    [bsc, other] = await Promise.all([startTestChain({ evmChainId: 56, tokens: [{ currency: 'USDT', name: 'Tether USD (BSC test)', decimals: 18 }] }), startTestChain()]);
    missingPort = await closedPort();
    file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sg-file-chains-')), 'chains.yaml');
    fs.writeFileSync(
      file,
      'chains:\n' +
        fileChain('bsc-local', 56, bsc.url, bsc.tokens.USDT, 18) +
        fileChain('missing-local', 561, `http://127.0.0.1:${missingPort}`, randomEvmAddress(), 6) +
        // Another chain's node (an ethereum-local anvil, chain id 31337) whose USDT even has the file's decimals.
        fileChain('wrong-local', 57, other.url, other.tokens.USDT, 6) +
        fileChain('remote-local', 562, 'http://rpc.example.invalid:8545', randomEvmAddress(), 6),
    );
  });
  after(async () => {
    if (p) {
      p.child.kill('SIGTERM');
      await Promise.race([p.exited, new Promise((r) => setTimeout(r, 20_000))]);
      p.killGroup();
    }
    await Promise.all([bsc?.stop(), other?.stop()]);
    await db.drop();
  });

  it('names each missing or wrong node with how to start or fix it, and says nothing of the chain whose node answers', async () => {
    p = spawnEntry('scripts/start.ts', {
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}filechains`,
      PORT: '0',
      NETWORK: 'local',
      START_LOCAL_CHAIN: 'false',
      CHAINS_FILE: file,
    });
    await p.waitFor(/API listening/, 90_000);
    const out = p.stdout();
    for (const k of out.matchAll(/pk_[A-Za-z0-9_-]+/g)) knownSecrets.add(k[0]);
    expect(out).to.include(`  CHAINS_FILE ${file}:\n`);
    expect(out).to.include(`  Chain missing-local (chains file): no node answers at http://127.0.0.1:${missingPort}; npm start starts nodes for the built-in local chains only.\n`);
    expect(out).to.include(`    Start its node (npx anvil --port ${missingPort} --chain-id 561), deploy on it the token contracts the file names for missing-local, then restart npm start.\n`);
    expect(out).to.include('    Until then missing-local is not scanned: payments on it are not seen, and after a minute /health shows it degraded.\n');
    expect(out).to.include(`  Chain wrong-local (chains file): the node at ${other.url} answers chain id 31337, the file says 57.\n`);
    expect(out).to.include("whose blocks would be read as wrong-local's: give wrong-local its own node and URL (the file's rpcUrls or RPC_URLS_WRONG_LOCAL)");
    expect(out).to.include('  Chain remote-local (chains file): no node answers at http://rpc.example.invalid:8545;');
    expect(out).to.include("    Check that URL (the file's rpcUrls, or RPC_URLS_REMOTE_LOCAL); its node is not one npm start runs.\n");
    expect(out).to.not.match(/Chain bsc-local/);
    // Printed before the API listens: start-up information, not something that comes later.
    expect(out.indexOf('CHAINS_FILE')).to.be.lessThan(out.indexOf('API listening'));
  });
});
