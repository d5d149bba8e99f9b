import { expect } from 'chai';
import { and, count, eq } from 'drizzle-orm';
import { refunds } from '../../db/schema';
import { buildTestApp, createTestOrg, testDb, type TestOrg } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';

/**
 * Payouts in the dashboard, as a browser sends the forms: the Payouts page lists them; an Admin's
 * "New payout" form calls the API's domain operation (with a destination typed twice: claimed; or
 * without: a claim link); a refused one is answered on the page and changes nothing; Members and
 * Viewers see the list but not the form, and cannot post it.
 */
describe('dashboard: payouts', () => {
  const t = buildTestApp({ env: { ...tokenEnv(), PUBLIC_BASE_URL: 'http://127.0.0.1' } });
  let org: TestOrg;
  const users = {} as Record<'admin' | 'member' | 'viewer', { email: string; password: string }>;
  const as = async (who: 'admin' | 'member' | 'viewer') => {
    const c = dashboardClient(t.app, t.deps.config.publicBaseUrl);
    expect((await c.signIn(users[who].email, users[who].password)).status).to.equal(303);
    return c;
  };
  const payouts = () => testDb().select().from(refunds).where(and(eq(refunds.organizationId, org.organizationId), eq(refunds.kind, 'payout')));
  const payoutCount = async () => (await testDb().select({ n: count() }).from(refunds).where(and(eq(refunds.organizationId, org.organizationId), eq(refunds.kind, 'payout'))))[0].n;
  let pool: string[];

  before(async () => {
    org = await createTestOrg('Dashboard payouts');
    pool = await seedPoolAddresses(org.organizationId, 'evm', 5);
    for (const role of ['admin', 'member', 'viewer'] as const) users[role] = await createDashboardUser(org.organizationId, role, `${role}-payouts@example.com`);
  });

  it('an Admin creates a payout with a destination (claimed) and one without (claim link); both are listed, and approve shows the payment link', async () => {
    const admin = await as('admin');
    const listPage = await admin.get('/dashboard/payouts');
    expect(listPage.status).to.equal(200);
    expect(listPage.text).to.include('New payout');
    expect(listPage.text).to.include(`value="USDT@${CHAIN}"`);

    const destination = randomEvmAddress();
    const created = await admin.post('/dashboard/payouts', { _csrf: await admin.csrf(), amount: '75', token: `USDT@${CHAIN}`, reason: 'affiliate March', destination, confirmation: destination.toLowerCase() });
    expect(created.status, created.text.slice(0, 500)).to.equal(201);
    expect(created.text).to.include('Payout created: approve it');
    const [row] = await payouts();
    expect(row).to.include({ kind: 'payout', status: 'claimed', amount: 75_000_000n, destination, reason: 'affiliate March', requestedBy: users.admin.email });

    const open = await admin.post('/dashboard/payouts', { _csrf: await admin.csrf(), amount: '5', token: `USDT@${CHAIN}`, reason: 'seller 7', destination: '', confirmation: '' });
    expect(open.status).to.equal(201);
    expect(open.text).to.match(/id="claim-url" type="text" readonly value="http:\/\/127\.0\.0\.1\/refund\/[A-Za-z0-9_-]{22}"/);
    expect((await payouts()).find((p) => p.reason === 'seller 7')).to.include({ status: 'awaiting_claim', destination: null });

    const list = await admin.get('/dashboard/payouts?status=claimed');
    expect(list.text).to.include(`data-payout-id="${row.id}"`);
    expect(list.text).to.not.include('seller 7');
    // Payouts are not listed among the refunds.
    expect((await admin.get('/dashboard/refunds')).text).to.not.include(`data-refund-id="${row.id}"`);

    const approved = await admin.post(`/dashboard/refunds/${row.id}/approve`, { _csrf: await admin.csrf() });
    expect(approved.status).to.equal(200);
    expect(approved.text).to.include(`ethereum:${row.tokenAddress}@31337/transfer?address=${destination}&amp;uint256=75000000`);
    expect(approved.text).to.include('Payout');
  });

  it('refuses a bad destination or amount on the page, keeping the form, and creates nothing', async () => {
    const admin = await as('admin');
    const before = await payoutCount();
    const cases: [Record<string, string>, string][] = [
      [{ destination: pool[0], confirmation: pool[0] }, 'pool address'],
      [{ destination: '0x0000000000000000000000000000000000000000', confirmation: '0x0000000000000000000000000000000000000000' }, 'zero address'],
      [{ destination: randomEvmAddress(), confirmation: randomEvmAddress() }, 'not the same address'],
      [{ amount: '0' }, 'greater than zero'],
      [{ token: 'nonsense' }, 'Choose the token'],
    ];
    for (const [fields, words] of cases) {
      const res = await admin.post('/dashboard/payouts', { _csrf: await admin.csrf(), amount: '10', token: `USDT@${CHAIN}`, reason: 'refused case', destination: '', confirmation: '', ...fields });
      expect(res.status, words).to.equal(400);
      expect(res.text).to.include(words);
      expect(res.text).to.include('value="refused case"');
    }
    expect(await payoutCount()).to.equal(before);
  });

  it('Members and Viewers see the list without the form and cannot post it', async () => {
    const before = await payoutCount();
    for (const who of ['member', 'viewer'] as const) {
      const c = await as(who);
      const listPage = await c.get('/dashboard/payouts');
      expect(listPage.status).to.equal(200);
      expect(listPage.text).to.not.include('action="/dashboard/payouts" class="new-payout"');
      expect((await c.post('/dashboard/payouts', { _csrf: await c.csrf(), amount: '1', token: `USDT@${CHAIN}`, reason: 'x' })).status).to.equal(403);
    }
    expect(await payoutCount()).to.equal(before);
  });
});
