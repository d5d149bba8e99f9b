import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { listOf } from '../helpers/wire';
import { tokenEnv } from '../helpers/orders';
import { setConfigValue } from '../../core/organizations/org-config';

describe('GET /api/v1/chains: discovery from the registry', () => {
  const tokens = tokenEnv();
  let org: TestOrg;
  before(async () => {
    org = await createTestOrg('Chains org');
  });

  for (const style of STYLES) {
    it(`lists the enabled chains with family, offered currencies (token, decimals), confirmations and finality (style ${style.toUpperCase()})`, async () => {
      const { app, deps } = buildTestApp({ style, env: tokens });
      const res = await request(app).get('/api/v1/chains').set('X-API-Key', org.keys.viewer);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const { items, pagination } = listOf(style, res, 'chains');
      const enabled = deps.registry.list().filter((c) => c.enabled);
      expect(items.map((c) => c.chainId)).to.deep.equal(enabled.map((c) => c.chainId));
      expect(pagination.total).to.equal(enabled.length);
      const local = items.find((c) => c.chainId === 'ethereum-local');
      expect(local).to.deep.include({ family: 'evm', network: 'local', evmChainId: 31337 });
      expect(local.currencies).to.deep.equal([
        { currency: 'USDT', token: tokens.TOKEN_ETHEREUM_LOCAL_USDT, decimals: 6 },
        { currency: 'USDC', token: tokens.TOKEN_ETHEREUM_LOCAL_USDC, decimals: 6 },
        { currency: 'DAI', token: tokens.TOKEN_ETHEREUM_LOCAL_DAI, decimals: 18 },
      ]);
      expect(local.requiredConfirmations).to.deep.equal({ orders: 3, deposits: 3 });
      expect(local.finality).to.deep.include({ rule: 'depth', blocks: 10 });
      const tron = items.find((c) => c.chainId === 'tron-local');
      expect(tron.family).to.equal('tron');
      expect(tron.finality.rule).to.equal('solidified');
      // A currency whose token is not known is not offered (orders in it are INVALID_CURRENCY).
      expect(tron.currencies).to.deep.equal([]);
    });
  }

  // The chains of issue 41, as GET /chains lists them per NETWORK: the official contracts and decimals.
  const deployed = { SECRET_ENCRYPTION_KEY: 'cd'.repeat(32), PUBLIC_BASE_URL: 'https://pay.example.com' };
  type Expected = Record<string, { evmChainId: number; currencies: [string, string, number][] }>;
  const issue41: Record<'mainnet' | 'testnet', Expected> = {
    mainnet: {
      'bsc-mainnet': { evmChainId: 56, currencies: [['USDT', '0x55d398326f99059fF775485246999027B3197955', 18], ['USDC', '0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d', 18]] },
      'base-mainnet': { evmChainId: 8453, currencies: [['USDC', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', 6]] },
      'arbitrum-mainnet': { evmChainId: 42161, currencies: [['USDT', '0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9', 6], ['USDC', '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', 6]] },
      'optimism-mainnet': { evmChainId: 10, currencies: [['USDT', '0x01bFF41798a0BcF287b996046Ca68b395DbC1071', 6], ['USDC', '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85', 6]] },
      'avalanche-mainnet': { evmChainId: 43114, currencies: [['USDT', '0x9702230A8Ea53601f5cD2dc00fDBc13d4dF4A8c7', 6], ['USDC', '0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E', 6]] },
    },
    testnet: {
      // No issuer deploys on BSC Testnet: listed, offering nothing until TOKEN_BSC_TESTNET_<CURRENCY> says where.
      'bsc-testnet': { evmChainId: 97, currencies: [] },
      'base-sepolia': { evmChainId: 84532, currencies: [['USDC', '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 6]] },
      'arbitrum-sepolia': { evmChainId: 421614, currencies: [['USDC', '0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d', 6]] },
      'optimism-sepolia': { evmChainId: 11155420, currencies: [['USDC', '0x5fd84259d66Cd46123540766Be93DFE6D43130D7', 6]] },
      'avalanche-fuji': { evmChainId: 43113, currencies: [['USDC', '0x5425890298aed601595a70AB815c96711a31Bc65', 6]] },
    },
  };
  for (const network of ['mainnet', 'testnet'] as const) {
    for (const style of STYLES) {
      it(`NETWORK=${network} lists BSC, Base, Arbitrum, OP and Avalanche (${network === 'mainnet' ? 'mainnets' : 'testnets'}) with their USDT and USDC contracts and decimals (style ${style.toUpperCase()})`, async () => {
        const { app } = buildTestApp({ style, env: { NETWORK: network, ...deployed } });
        const res = await request(app).get('/api/v1/chains?limit=100').set('X-API-Key', org.keys.viewer);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        const { items } = listOf(style, res, 'chains');
        expect(items.every((c) => c.network === network)).to.equal(true);
        const others = network === 'mainnet' ? ['ethereum-mainnet', 'polygon-mainnet', 'tron-mainnet', 'solana-mainnet'] : ['ethereum-sepolia', 'polygon-amoy', 'tron-nile', 'solana-devnet'];
        expect(items.map((c) => c.chainId).sort()).to.deep.equal([...others, ...Object.keys(issue41[network])].sort());
        for (const [chainId, want] of Object.entries(issue41[network])) {
          const chain = items.find((c) => c.chainId === chainId);
          expect(chain, chainId).to.deep.include({ family: 'evm', network, evmChainId: want.evmChainId });
          expect(chain.currencies, chainId).to.deep.equal(want.currencies.map(([currency, token, decimals]) => ({ currency, token, decimals })));
          expect(chain.finality.rule, chainId).to.equal('finalized-tag');
          expect(chain.requiredConfirmations.orders, chainId).to.be.at.least(3);
        }
      });
    }
  }

  it("shows the organization's own confirmations (its settings raise the chain's), and needs a key", async () => {
    const { app } = buildTestApp({ env: tokens });
    const raised = await createTestOrg('Careful org');
    await setConfigValue(testDb(), raised.organizationId, 'confirmations.orders', 12);
    const res = await request(app).get('/api/v1/chains').set('X-API-Key', raised.keys.viewer);
    const local = res.body.data.find((c: { chainId: string }) => c.chainId === 'ethereum-local');
    expect(local.requiredConfirmations).to.deep.equal({ orders: 12, deposits: 3 });
    expect((await request(app).get('/api/v1/chains')).status).to.equal(401);
  });

  it('is in the OpenAPI document with its schema', async () => {
    const { app } = buildTestApp();
    const doc = (await request(app).get('/api/v1/openapi.json')).body;
    expect(doc.paths['/api/v1/chains'].get.summary).to.match(/Enabled chains/);
    expect(JSON.stringify(doc.paths['/api/v1/chains'].get.responses['200'])).to.include('requiredConfirmations');
  });
});
