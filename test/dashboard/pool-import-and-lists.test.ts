import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import request from 'supertest';
import { newId } from '../../core/platform/ids';
import { depositBindings, deposits, poolAddresses } from '../../db/schema';
import { buildTestApp, createTestOrg, testDb, type TestOrg } from '../helpers/harness';
import { createDashboardUser, dashboardClient, csrfOf } from '../helpers/dashboard';
import { tokenEnv } from '../helpers/orders';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';

/**
 * Issue 40, a newcomer's trial of the dashboard: the pool import said "nothing was imported" twice
 * and lost the pasted CSV; addresses and hashes wrapped into ten-line cells; chains showed as ids;
 * a completed EVM deposit read "completed 10/3".
 */
describe('dashboard: pool import refusals and the lists’ cells', function () {
  this.timeout(60_000);
  const t = buildTestApp({ env: tokenEnv() });
  let org: TestOrg;
  let c: ReturnType<typeof dashboardClient>;

  before(async () => {
    org = await createTestOrg('Newcomer Co');
    const admin = await createDashboardUser(org.organizationId, 'admin', `admin-${Date.now()}@newcomer.test`);
    c = dashboardClient(t.app, t.config.publicBaseUrl);
    expect((await c.signIn(admin.email, admin.password)).status).to.equal(303);
  });

  const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

  it('a refused import says "nothing was imported" once and keeps the pasted CSV, protocol and mode; nothing is stored', async () => {
    const good = randomEvmAddress();
    const bad = `0x${'ab'.repeat(25)}`; // 50 hex digits: not an address
    const csv = `address,protocol\n${good},evm\n${bad},evm\n"quoted <tag>",evm`;
    const page = await c.get('/dashboard/pool');
    const res = await c.post('/dashboard/pool/import', { _csrf: csrfOf(page.text), protocol: 'evm', mode: 'self_managed', addresses: csv });
    expect(res.status).to.equal(400);
    expect(res.text.match(/nothing was imported/gi)).to.have.length(1);
    expect(res.text).to.include(`<textarea id="imp-csv" name="addresses" rows="8" required>${escape(csv)}</textarea>`);
    expect(res.text).to.match(/<option selected>evm<\/option>/);
    expect(res.text).to.include('<option value="self_managed" selected>self_managed</option>');
    // The bad address in the error table: one line, shortened in the middle, the whole in its title.
    expect(res.text).to.include(`<span class="long-value" title="${bad}"><span aria-hidden="true">${bad.slice(0, 10)}…${bad.slice(-8)}</span>`);
    expect(await testDb().select().from(poolAddresses).where(eq(poolAddresses.organizationId, org.organizationId))).to.have.length(0);
  });

  it('a refusal for key material keeps nothing of what was pasted (never echoed)', async () => {
    const phrase = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
    const page = await c.get('/dashboard/pool');
    const res = await c.post('/dashboard/pool/import', { _csrf: csrfOf(page.text), protocol: 'evm', mode: 'self_managed', addresses: `address,protocol\n${phrase},evm` });
    expect(res.status).to.equal(400);
    expect(res.text.match(/nothing was imported/gi)).to.have.length(1);
    expect(res.text).to.include('<textarea id="imp-csv" name="addresses" rows="8" required></textarea>');
    expect(res.text).to.not.include('abandon');
  });

  it('deposits and transfers: the chain by name, confirmations in words, addresses and hashes on one line', async () => {
    await seedPoolAddresses(org.organizationId, 'evm', 2);
    const bound = await request(t.app).post('/api/v1/deposits/bind').set('X-API-Key', org.keys.member).send({ depositReference: 'alice', protocol: 'evm' });
    expect(bound.status, JSON.stringify(bound.body)).to.equal(201);
    const address = (bound.body.data ?? bound.body).address;
    const [binding] = await testDb().select().from(depositBindings).where(eq(depositBindings.organizationId, org.organizationId));
    const common = { chainId: 'ethereum-local', currency: 'USDT', amount: 5_000_000n, toAddress: address, organizationId: org.organizationId, depositBindingId: binding.id };
    const done = await insertTestTransfer({ ...common, status: 'confirmed', confirmations: 10, requiredConfirmations: 3 });
    const waiting = await insertTestTransfer({ ...common, status: 'pending', confirmations: 1, requiredConfirmations: 3 });
    await testDb().insert(deposits).values([
      { id: newId('dep'), organizationId: org.organizationId, bindingId: binding.id, depositReference: 'alice', transferId: done.id, status: 'completed', requiredConfirmations: 3 },
      { id: newId('dep'), organizationId: org.organizationId, bindingId: binding.id, depositReference: 'alice', transferId: waiting.id, status: 'pending', requiredConfirmations: 3 },
    ]);

    const list = await c.get('/dashboard/deposits');
    expect(list.status).to.equal(200);
    expect(list.text).to.include('<span class="badge">completed</span> 10 confirmations');
    expect(list.text).to.include('<span class="badge">pending</span> 1 of 3 confirmations');
    expect(list.text).to.not.match(/10\/3|1\/3/);
    expect(list.text).to.include('<span title="ethereum-local">Local EVM (anvil)</span>');
    expect(list.text).to.include(`title="${done.txHash}"`);
    expect(list.text).to.include(`${done.txHash.slice(0, 10)}…${done.txHash.slice(-8)}`);

    const transfers = await c.get('/dashboard/transfers');
    expect(transfers.status).to.equal(200);
    expect(transfers.text).to.include('<span class="badge">confirmed</span> 10 confirmations');
    expect(transfers.text).to.include('<span class="badge">pending</span> 1 of 3 confirmations');
    expect(transfers.text).to.include(`<span class="long-value" title="${address}">`);
    expect(transfers.text).to.include('<span title="ethereum-local">Local EVM (anvil)</span>');
    // The one-line rule lives in the stylesheet (CSP: no inline styles).
    const css = await request(t.app).get(transfers.text.match(/href="(\/static\/dashboard\.css\?v=\w+)"/)![1]);
    expect(css.text).to.match(/\.long-value \{[^}]*white-space: nowrap/);
  });
});
