import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { CHAIN_DEFINITIONS } from '../../core/chains/chains.data';
import { parseChainsFile } from '../../core/chains/chains-file';
import { ConfigError, ENVIRONMENT_VARIABLES } from '../../core/platform/config';
import { buildTestApp, createTestOrg, STYLES, TEST_DATABASE_URL, testConfig, type TestOrg } from '../helpers/harness';
import { listOf } from '../helpers/wire';
import { spawnEntry } from '../helpers/processes';

const EURC = '0x1aBaEA1f7C830bD89Acc67eC4af516284b1bC33c';
const BSC_USDT = '0x55d398326f99059fF775485246999027B3197955';

/** A chains file that uses all three powers: a chain added, a token added, a chain and a token turned off. */
const GOOD_YAML = `# operator's chains
chains:
  - chainId: bsc-local
    name: Local BSC (anvil)
    network: local
    evmChainId: 56
    rpcUrls: [http://127.0.0.1:8546]
    blockTimeMs: 3000
    orderConfirmations: 5
    finality: { kind: depth, blocks: 15 }
    tokens:
      USDT: { address: "${BSC_USDT.toLowerCase()}", decimals: 18 }
tokens:
  - chainId: ethereum-local
    currency: EURC
    address: "${EURC}"
    decimals: 6
disable:
  - chainId: solana-local
  - chainId: ethereum-local
    currency: DAI
`;

function tempFile(name: string, text: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-chains-file-'));
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

/** The problems a text's check reports (it must fail). */
function problemsOf(text: string, name = 'chains.yaml'): string[] {
  try {
    parseChainsFile(name, text, CHAIN_DEFINITIONS);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('the file was accepted');
}

describe('chains file (CHAINS_FILE): operator-defined chains and tokens', () => {
  it('is a variable of the environment schema, read as an absolute path', () => {
    expect(ENVIRONMENT_VARIABLES).to.include('CHAINS_FILE');
    expect(testConfig().chainsFile).to.equal(null);
    expect(testConfig({ CHAINS_FILE: 'ops/chains.yaml' }).chainsFile).to.equal(path.resolve('ops/chains.yaml'));
  });

  it('adds an EVM chain, adds a token to a built-in chain, turns off a chain and a token', () => {
    const file = parseChainsFile('chains.yaml', GOOD_YAML, CHAIN_DEFINITIONS);
    const r = ChainRegistry.forNetwork('local', SCANNED_FAMILIES, {}, file);
    const bsc = r.get('bsc-local')!;
    expect(bsc).to.deep.include({ protocol: 'evm', network: 'local', evmChainId: 56, enabled: true, blockTimeMs: 3000, orderConfirmations: 5, depositConfirmations: 5 });
    expect(bsc.finality).to.deep.equal({ kind: 'depth', blocks: 15 });
    // The address is stored in its checksum form, as every EVM address is.
    expect(bsc.tokens.USDT).to.deep.equal({ currency: 'USDT', address: BSC_USDT, decimals: 18 });
    expect(r.tokenDecimals('bsc-local', 'USDT')).to.equal(18);
    expect(r.get('ethereum-local')!.tokens.EURC).to.deep.equal({ currency: 'EURC', address: EURC, decimals: 6 });
    expect(r.get('ethereum-local')!.tokens.DAI).to.equal(undefined);
    expect(r.get('solana-local')).to.equal(undefined);
    // Rows written before a token was turned off still format with its decimals.
    expect(r.tokenDecimals('ethereum-local', 'DAI')).to.equal(18);
    expect(r.knownTokens()).to.deep.include({ chainId: 'bsc-local', currency: 'USDT', decimals: 18 });
    // Environment overrides apply to the file's chains like to built-in ones.
    const overridden = ChainRegistry.forNetwork('local', SCANNED_FAMILIES, { RPC_URLS_BSC_LOCAL: 'http://10.0.0.1:8545', CONFIRMATIONS_BSC_LOCAL: '9' }, file);
    expect(overridden.get('bsc-local')!.rpcUrls).to.deep.equal(['http://10.0.0.1:8545']);
    expect(overridden.get('bsc-local')!.orderConfirmations).to.equal(9);
    // Another network's registry ignores a chain of the local network.
    expect(ChainRegistry.forNetwork('mainnet', SCANNED_FAMILIES, {}, file).get('bsc-local')).to.equal(undefined);
  });

  it('reads JSON as well', () => {
    const json = JSON.stringify({ tokens: [{ chainId: 'ethereum-mainnet', currency: 'PYUSD', address: '0x6c3ea9036406852006290770BEdFcAbA0e23A0e8', decimals: 6 }], disable: [{ chainId: 'tron-mainnet' }] }, null, 2);
    const r = ChainRegistry.forNetwork('mainnet', SCANNED_FAMILIES, {}, parseChainsFile('chains.json', json, CHAIN_DEFINITIONS));
    expect(r.get('ethereum-mainnet')!.tokens.PYUSD!.decimals).to.equal(6);
    expect(r.get('tron-mainnet')).to.equal(undefined);
  });

  it('names the line (and field) of what is wrong', () => {
    expect(problemsOf('chains:\n  - chainId: x\n    name: [unclosed\n')).to.satisfy((p: string[]) => p.length > 0 && p.every((l) => /^CHAINS_FILE chains\.yaml line \d+: not valid YAML or JSON/.test(l)));
    expect(problemsOf('{\n  "tokens": [\n    { "chainId": "ethereum-local", }\n', 'chains.json')[0]).to.match(/^CHAINS_FILE chains\.json line \d+: not valid YAML or JSON/);

    const missing = GOOD_YAML.replace('    evmChainId: 56\n', '');
    expect(problemsOf(missing)).to.deep.equal(['CHAINS_FILE chains.yaml line 3 (chains[0]): missing field "evmChainId"']);

    const badAddress = GOOD_YAML.replace(`address: "${EURC}"`, 'address: "0x1234"');
    expect(problemsOf(badAddress)).to.deep.equal([
      'CHAINS_FILE chains.yaml line 16 (tokens[0].address): not an EVM address: expected 0x followed by 40 hexadecimal characters (got "0x1234")',
    ]);
    const badChainToken = GOOD_YAML.replace(`"${BSC_USDT.toLowerCase()}"`, '"T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"');
    expect(problemsOf(badChainToken)[0]).to.match(/^CHAINS_FILE chains\.yaml line 12 \(chains\[0\]\.tokens\.USDT\.address\): not an EVM address/);

    // USD is the pricing currency of USD orders, never a token; a peg is a 3-letter fiat code.
    expect(problemsOf(GOOD_YAML.replace('currency: EURC', 'currency: USD'))).to.deep.equal([
      'CHAINS_FILE chains.yaml line 15 (tokens[0].currency): must be a token symbol of 2 to 12 uppercase letters or digits other than USD, e.g. EURC (got "USD")',
    ]);
    expect(problemsOf(GOOD_YAML.replace('decimals: 6', 'decimals: 6\n    peg: euro'))[0]).to.match(/^CHAINS_FILE chains\.yaml line 18 \(tokens\[0\]\.peg\): must be a fiat currency code/);

    // Several problems at once, each with its own line.
    const several = GOOD_YAML.replace('blockTimeMs: 3000', 'blockTimeMs: fast').replace('decimals: 6', 'decimals: -1').replace('currency: EURC', 'currency: eurc').replace('network: local', 'network: moon').replace('kind: depth', 'kind: sometimes');
    expect(problemsOf(several)).to.have.members([
      'CHAINS_FILE chains.yaml line 5 (chains[0].network): must be one of local, testnet, mainnet (got "moon")',
      'CHAINS_FILE chains.yaml line 8 (chains[0].blockTimeMs): must be a whole number (got "fast")',
      'CHAINS_FILE chains.yaml line 10 (chains[0].finality.kind): must be one of depth, finalized-tag (got "sometimes")',
      'CHAINS_FILE chains.yaml line 15 (tokens[0].currency): must be a token symbol of 2 to 12 uppercase letters or digits other than USD, e.g. EURC (got "eurc")',
      'CHAINS_FILE chains.yaml line 17 (tokens[0].decimals): must be from 0 to 36 (got -1)',
    ]);
    expect(problemsOf(GOOD_YAML.replace('    orderConfirmations: 5\n', '    orderConfirmations: 5\n    confirmations: 5\n'))).to.deep.equal([
      'CHAINS_FILE chains.yaml line 10 (chains[0].confirmations): unknown field "confirmations"',
    ]);
    expect(problemsOf(GOOD_YAML.replace('      USDT: {', '      usdt: {'))).to.deep.equal([
      'CHAINS_FILE chains.yaml line 12 (chains[0].tokens.usdt): "usdt" is not a token symbol (2 to 12 uppercase letters or digits, not USD)',
    ]);
  });

  it('refuses what would clash with the registry: a built-in chain id, an evmChainId taken, an unknown chain, a token twice', () => {
    expect(problemsOf(GOOD_YAML.replace('chainId: bsc-local', 'chainId: ethereum-local'))[0]).to.equal(
      'CHAINS_FILE chains.yaml line 3 (chains[0].chainId): "ethereum-local" is a built-in chain: add tokens to it under tokens:, or turn it off under disable:',
    );
    expect(problemsOf(GOOD_YAML.replace('evmChainId: 56', 'evmChainId: 31337'))).to.deep.equal([
      'CHAINS_FILE chains.yaml line 6 (chains[0].evmChainId): 31337 is already the evmChainId of ethereum-local on network local',
    ]);
    expect(problemsOf(GOOD_YAML.replace('  - chainId: ethereum-local\n    currency: EURC', '  - chainId: ethereum-locale\n    currency: EURC'))).to.deep.equal([
      'CHAINS_FILE chains.yaml line 14 (tokens[0].chainId): no chain "ethereum-locale" (built-in or in this file)',
    ]);
    expect(problemsOf(GOOD_YAML.replace('currency: EURC', 'currency: USDC'))).to.deep.equal(['CHAINS_FILE chains.yaml line 15 (tokens[0].currency): ethereum-local already has a USDC token']);
    expect(problemsOf(GOOD_YAML.replace('    currency: DAI', '    currency: GHO'))).to.deep.equal(['CHAINS_FILE chains.yaml line 21 (disable[1].currency): ethereum-local has no GHO token']);
    expect(problemsOf(GOOD_YAML.replace('kind: depth, blocks: 15', 'kind: depth'))).to.deep.equal([
      'CHAINS_FILE chains.yaml line 10 (chains[0].finality): kind depth needs blocks: how many blocks on top make a block final',
    ]);
  });

  describe('GET /api/v1/chains shows the result', () => {
    let org: TestOrg;
    let file: string;
    before(async () => {
      org = await createTestOrg('Chains file org');
      file = tempFile('chains.yaml', GOOD_YAML);
    });
    for (const style of STYLES) {
      it(`the added chain and token are listed, the disabled ones are not (style ${style.toUpperCase()})`, async () => {
        const { app } = buildTestApp({ style, env: { CHAINS_FILE: file, TOKEN_ETHEREUM_LOCAL_USDT: '0x5FbDB2315678afecb367f032d93F642f64180aa3' } });
        const res = await request(app).get('/api/v1/chains').set('X-API-Key', org.keys.viewer);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        const { items } = listOf(style, res, 'chains');
        const ids = items.map((c) => c.chainId);
        expect(ids).to.include.members(['bsc-local', 'ethereum-local']);
        expect(ids).not.to.include('solana-local');
        const bsc = items.find((c) => c.chainId === 'bsc-local');
        expect(bsc).to.deep.include({ family: 'evm', network: 'local', evmChainId: 56, name: 'Local BSC (anvil)' });
        expect(bsc.currencies).to.deep.equal([{ currency: 'USDT', token: BSC_USDT, decimals: 18 }]);
        const local = items.find((c) => c.chainId === 'ethereum-local');
        expect(local.currencies.map((c: { currency: string }) => c.currency)).to.deep.equal(['USDT', 'EURC']);
      });
    }
  });

  it('a wrong file stops the API at start-up, before any connection, naming the line', async () => {
    const file = tempFile('chains.yaml', GOOD_YAML.replace('    evmChainId: 56\n', ''));
    // A database that does not exist: the chains file is checked before any connection is tried.
    const api = spawnEntry('api/main.ts', { DATABASE_URL: `${TEST_DATABASE_URL}_absent`, CHAINS_FILE: file, PORT: '0', LOG_LEVEL: 'info' });
    const code = await api.exited;
    expect(code).to.not.equal(0);
    expect(api.stderr() + api.stdout()).to.include(`CHAINS_FILE ${file} line 3 (chains[0]): missing field "evmChainId"`);
  });
});
