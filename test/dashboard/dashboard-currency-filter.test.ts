import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg } from '../helpers/harness';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';
import { tokenEnv } from '../helpers/orders';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';

/** A chains file adding a token to ethereum-local, a chain with a token of its own and one it shares, and turning DAI off. */
function chainsFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-dash-currencies-'));
  const file = path.join(dir, 'chains.yaml');
  fs.writeFileSync(
    file,
    `chains:
  - chainId: bsc-local
    name: Local BSC (anvil)
    network: local
    evmChainId: 56
    rpcUrls: [http://127.0.0.1:8546]
    blockTimeMs: 3000
    orderConfirmations: 5
    finality: { kind: depth, blocks: 15 }
    tokens:
      USDT: { address: "${randomEvmAddress()}", decimals: 18 }
      PYUSD: { address: "${randomEvmAddress()}", decimals: 6 }
tokens:
  - chainId: ethereum-local
    currency: EURC
    address: "${randomEvmAddress()}"
    decimals: 6
disable:
  - chainId: ethereum-local
    currency: DAI
`,
  );
  return file;
}

/** The options of the orders page's currency filter, in page order, and the selected one. */
function currencyFilter(page: string): { options: string[]; selected: string | null } {
  const select = /<select id="currency" name="currency">([\s\S]*?)<\/select>/.exec(page);
  if (!select) throw new Error('no currency filter on the page');
  const options = [...select[1].matchAll(/<option( selected)?[^>]*>([^<]*)<\/option>/g)].map((m) => ({ text: m[2], selected: !!m[1] }));
  return { options: options.map((o) => o.text), selected: options.find((o) => o.selected)?.text ?? null };
}

/**
 * The orders page's currency filter lists the symbols the deployment's enabled chains offer (the
 * chain registry, chains file included), once each and sorted, not a fixed USDT/USDC/DAI.
 */
describe('dashboard: the orders currency filter comes from the chain registry', function () {
  this.timeout(60_000);
  let org: TestOrg;
  let viewer: { email: string; password: string };

  before(async () => {
    org = await createTestOrg('Currency filter Co');
    viewer = await createDashboardUser(org.organizationId, 'viewer', `viewer-${Date.now()}@currency-filter.test`);
    await seedPoolAddresses(org.organizationId, 'evm', 4);
  });

  async function ordersPage(t: TestApp, query = ''): Promise<string> {
    const c = dashboardClient(t.app, t.config.publicBaseUrl);
    await c.signIn(viewer.email, viewer.password);
    const res = await c.get(`/dashboard/orders${query}`);
    expect(res.status).to.equal(200);
    return res.text;
  }

  it('without a chains file: the built-in tokens the local chain offers', async () => {
    const t = buildTestApp({ env: tokenEnv() });
    expect(currencyFilter(await ordersPage(t)).options).to.deep.equal(['all', 'DAI', 'USD', 'USDC', 'USDT']);
  });

  it("with a chains file: its added tokens (EURC, PYUSD) are offered, USDT of two chains once, the disabled DAI not; filtering by EURC lists the EURC order", async () => {
    const t = buildTestApp({ env: { ...tokenEnv(), CHAINS_FILE: chainsFile() } });
    expect(currencyFilter(await ordersPage(t)).options).to.deep.equal(['all', 'EURC', 'PYUSD', 'USD', 'USDC', 'USDT']);

    const create = async (currency: string) => {
      const res = await request(t.app)
        .post('/api/v1/orders')
        .set('X-API-Key', org.keys.member)
        .send({ orderReference: `filter-${currency}-${Date.now()}`, amount: '3.5', currency, chainId: 'ethereum-local' });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      return res.body.orderId as string;
    };
    const eurc = await create('EURC');
    const usdt = await create('USDT');
    const filtered = await ordersPage(t, '?currency=EURC');
    expect(currencyFilter(filtered).selected).to.equal('EURC');
    expect(filtered).to.include(`data-order-id="${eurc}"`);
    expect(filtered).to.not.include(`data-order-id="${usdt}"`);
  });

  it("a currency asked for in the URL that no enabled chain offers stays selected (an old order's token)", async () => {
    const t = buildTestApp({ env: { ...tokenEnv(), CHAINS_FILE: chainsFile() } });
    const filter = currencyFilter(await ordersPage(t, '?currency=dai'));
    expect(filter).to.deep.equal({ options: ['all', 'DAI', 'EURC', 'PYUSD', 'USD', 'USDC', 'USDT'], selected: 'DAI' });
  });
});
