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
