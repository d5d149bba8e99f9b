import { expect } from 'chai';
import { buildTestApp, createTestOrg } from '../helpers/harness';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';
import { insertTestTransfer } from '../helpers/transfers';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import request from 'supertest';
import { tokenEnv } from '../helpers/orders';

/**
 * The dashboard lists' search box with a text the list refuses (a mistyped address): the list page
 * says why and keeps the text; the CSV export of that search is a clear refusal, never a download
 * (dashboard-search.browser.test.ts has the screenshots).
 */
describe('dashboard list search refused', function () {
  this.timeout(60_000);
  const t = buildTestApp({ env: tokenEnv() });
  // EIP-55's example address with one letter's case flipped: a broken checksum.
  const miscased = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD';

  async function signedIn(org?: Awaited<ReturnType<typeof createTestOrg>>) {
    org ??= await createTestOrg('Refused search Co');
    const user = await createDashboardUser(org.organizationId, 'viewer', `viewer-${Date.now()}@refused-search.test`);
    const c = dashboardClient(t.app, t.config.publicBaseUrl);
    expect((await c.signIn(user.email, user.password)).status).to.equal(303);
    return c;
  }

  it('the orders and transfers pages answer 400 with the reason above the box and the text kept', async () => {
    const c = await signedIn();
    for (const path of ['/dashboard/orders', '/dashboard/transfers']) {
      const res = await c.get(`${path}?q=${miscased}`);
      expect(res.status, path).to.equal(400);
      expect(res.text).to.match(/role="alert">The search text is not a valid evm address/);
      expect(res.text).to.include(`value="${miscased}"`);
    }
  });

  it('the CSV export of a refused search is a 400 page, not a CSV of only its header row', async () => {
    const c = await signedIn();
    const res = await c.get(`/dashboard/orders.csv?q=${miscased}`);
    expect(res.status).to.equal(400);
    expect(res.headers['content-type']).to.match(/^text\/html/);
    expect(res.headers['content-disposition']).to.equal(undefined);
    expect(res.text).to.contain('not a valid evm address');
  });

  it("the transfers page's inbox (view=unattributed) lists what no order or deposit reference took, and only that", async () => {
    const org = await createTestOrg('Inbox Co');
    const c = await signedIn(org);
    const common = { chainId: 'ethereum-local', currency: 'USDT', amount: 1_000_000n, organizationId: org.organizationId };
    const stray = await insertTestTransfer({ ...common, toAddress: randomEvmAddress(), unattributedReason: 'no_holder' });
    await seedPoolAddresses(org.organizationId, 'evm', 1);
    const made = await request(t.app).post('/api/v1/orders').set('X-API-Key', org.keys.admin).send({ orderReference: 'inbox-1', amount: '1', currency: 'USDT', chainId: 'ethereum-local' });
    expect(made.status, JSON.stringify(made.body)).to.equal(201);
    const order = made.body.data ?? made.body;
    const credited = await insertTestTransfer({ ...common, toAddress: order.address, orderId: order.orderId ?? order.id });
    const all = await c.get('/dashboard/transfers');
    expect(all.status).to.equal(200);
    expect(all.text).to.include(stray.txHash).and.to.include(credited.txHash);
    const inbox = await c.get('/dashboard/transfers?view=unattributed');
    expect(inbox.status).to.equal(200);
    expect(inbox.text).to.include(stray.txHash);
    expect(inbox.text).to.not.include(credited.txHash);
  });
});
