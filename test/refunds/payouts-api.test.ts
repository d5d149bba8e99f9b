import { expect } from 'chai';
import request from 'supertest';
import { and, count, eq } from 'drizzle-orm';
import { getAddress, Interface } from 'ethers';
import { auditLog, refunds } from '../../db/schema';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg, TEST_REDIS_PREFIX } from '../helpers/harness';
import { seedPoolAddresses, randomEvmAddress } from '../helpers/pool';
import { dataOf, expectError, listOf } from '../helpers/wire';
import { CHAIN, eventsOf, tokenEnv } from '../helpers/orders';
import { expireDueRefunds } from '../../core/refunds/refunds';

/**
 * Payouts (issue 42): the refunds' machinery without an order, through the API in both wire
 * formats: a destination given by the merchant (claimed at once) or a claim link for the
 * recipient; refused destinations and amounts change nothing; roles and tenancy; idempotency; the
 * export carries them; their events are payout.* (the chain part: test/refunds/payout-payments.test.ts).
 */

const PUBLIC = 'https://pay.example.com';

for (const style of STYLES) {
  describe(`payouts API (style ${style.toUpperCase()})`, () => {
    const t = buildTestApp({ style, env: { ...tokenEnv(), PUBLIC_BASE_URL: PUBLIC, PAGE_RATE_LIMIT_PER_MINUTE: '1000000', REDIS_PREFIX: `${TEST_REDIS_PREFIX}po${style}` } });
    let org: TestOrg;
    let other: TestOrg;
    let pool: string[];
    let otherPool: string[];
    const post = (key: string, path: string, body: object = {}) => request(t.app).post(`/api/v1${path}`).set('X-API-Key', key).send(body);
    const get = (key: string, path: string, query: Record<string, unknown> = {}) => request(t.app).get(`/api/v1${path}`).query(query).set('X-API-Key', key);
    const payoutCount = async () => (await testDb().select({ n: count() }).from(refunds).where(and(eq(refunds.organizationId, org.organizationId), eq(refunds.kind, 'payout'))))[0].n;
    const base = { amount: '1500', currency: 'USDT', chainId: CHAIN, reason: 'affiliate March' };

    before(async () => {
      org = await createTestOrg(`Payouts ${style}`);
      other = await createTestOrg(`Payouts other ${style}`);
      pool = await seedPoolAddresses(org.organizationId, 'evm', 5);
      otherPool = await seedPoolAddresses(other.organizationId, 'evm', 2);
    });

    it('with a destination: claimed at once (po_…, kind payout), not capped by anything received, audit-logged; approve gives the payment link', async () => {
      const destination = randomEvmAddress();
      const res = await post(org.keys.admin, '/payouts', { ...base, destination: destination.toLowerCase() });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const payout = dataOf(style, res);
      expect(payout.id).to.match(/^po_[0-9a-z]{26}$/);
      expect(payout).to.include({ kind: 'payout', status: 'claimed', amount: '1500', amountPaid: '0', currency: 'USDT', chainId: CHAIN, destination, reason: 'affiliate March' });
      expect(payout).to.include({ orderId: null, depositReference: null, transferId: null, paymentUri: null });
      expect(payout.claimedAt).to.equal(payout.createdAt);
      expect(payout.issuedBy).to.match(/^api key key_/);
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${payout.id}`))).to.deep.equal(payout);
      // The merchant gave it: no payout.claimed (that is the recipient's step).
      expect((await eventsOf(org.organizationId, 'payout.claimed')).filter((e) => (e.data as { id: string }).id === payout.id)).to.have.length(0);

      const approved = dataOf(style, await post(org.keys.owner, `/refunds/${payout.id}/approve`));
      expect(approved).to.include({ status: 'approved', kind: 'payout' });
      expect(approved.paymentUri).to.match(/^ethereum:0x[0-9a-fA-F]{40}@31337\/transfer\?address=/);
      const audit = await testDb().select().from(auditLog).where(and(eq(auditLog.organizationId, org.organizationId), eq(auditLog.target, payout.id)));
      expect(audit.map((a) => a.action)).to.deep.equal(['payout.issued', 'payout.approved']);
      expect(audit[0].detail).to.include({ reason: 'affiliate March', amount: '1500', destination });
      expectError(style, await post(org.keys.owner, `/refunds/${payout.id}/approve`), 409, 'INVALID_STATUS_TRANSITION', 'Conflict');
    });

    it('without a destination: awaiting_claim with a claim link; the recipient\'s claim sends payout.claimed, not refund.claimed', async () => {
      const payout = dataOf(style, await post(org.keys.owner, '/payouts', { ...base, amount: '0.25' }));
      expect(payout).to.include({ status: 'awaiting_claim', destination: null, claimedAt: null });
      expect(payout.claimUrl).to.match(/^https:\/\/pay\.example\.com\/refund\/[A-Za-z0-9_-]{22}$/);
      const path = new URL(payout.claimUrl).pathname;
      const page = await request(t.app).get(path);
      expect(page.status).to.equal(200);
      expect(page.text).to.include(`Payment from Payouts ${style}`);
      expect(page.text).to.include('0.25 USDT');
      expect(page.text).to.not.include('Refund from');
      const destination = randomEvmAddress();
      const claim = await request(t.app).post(`${path}?lang=en`).set('Origin', PUBLIC).type('form').send(new URLSearchParams({ destination, confirmation: destination }).toString());
      expect(claim.status, claim.text.slice(0, 300)).to.be.oneOf([200, 303]);
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${payout.id}`))).to.include({ status: 'claimed', destination });
      const claimed = (await eventsOf(org.organizationId, 'payout.claimed')).map((e) => e.data as Record<string, unknown>);
      expect(claimed.find((d) => d.id === payout.id)).to.include({ kind: 'payout', status: 'claimed', destination });
      expect((await eventsOf(org.organizationId, 'refund.claimed')).filter((e) => (e.data as { id: string }).id === payout.id)).to.have.length(0);
    });

    it('refuses bad destinations and amounts with a clear error, creating nothing', async () => {
      const before = await payoutCount();
      const good = randomEvmAddress();
      const badChecksum = good.slice(0, 2) + [...good.slice(2)].map((c) => (/[a-f]/.test(c) ? c.toUpperCase() : /[A-F]/.test(c) ? c.toLowerCase() : c)).join('');
      expect(() => getAddress(badChecksum)).to.throw();
      const tokenAddress = t.deps.registry.requireToken(t.deps.registry.requireOfferedChain(CHAIN), 'USDT').address!;
      const cases: [string, string][] = [
        [badChecksum, 'not a valid address'],
        ['T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb', 'not a valid address'],
        ['0x0000000000000000000000000000000000000000', 'zero address'],
        [tokenAddress, 'token contract'],
        [pool[1], 'pool address'],
        [otherPool[0], 'pool address'],
        ['   ', 'must not be empty'],
      ];
      for (const [destination, words] of cases) {
        const res = await post(org.keys.admin, '/payouts', { ...base, destination });
        expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
        expect(res.body.message, destination).to.include(words);
      }
      for (const amount of ['0', '-1', '1.0000001', '1e6', 'ten']) expectError(style, await post(org.keys.admin, '/payouts', { ...base, amount }), 400, 'INVALID_AMOUNT', 'ValidationError');
      expectError(style, await post(org.keys.admin, '/payouts', { ...base, amount: 10 }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await post(org.keys.admin, '/payouts', { ...base, chainId: 'nope-chain' }), 400, 'INVALID_CHAIN', 'ValidationError');
      expectError(style, await post(org.keys.admin, '/payouts', { ...base, currency: 'XYZ' }), 400, 'INVALID_CURRENCY', 'ValidationError');
      expectError(style, await post(org.keys.admin, '/payouts', { ...base, reason: '  ' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await post(org.keys.admin, '/payouts', { ...base, expiresAt: '2020-01-01T00:00:00Z' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await post(org.keys.admin, '/payouts', { ...base, orderId: 'ord_x' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      const { amount: _amount, ...noAmount } = base;
      expectError(style, await post(org.keys.admin, '/payouts', noAmount), 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(await payoutCount()).to.equal(before);
    });

    it('roles and tenancy: Admin and Owner create, Member and Viewer 403; another organization sees 404', async () => {
      const before = await payoutCount();
      expectError(style, await post(org.keys.member, '/payouts', base), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await post(org.keys.viewer, '/payouts', base), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expect(await payoutCount()).to.equal(before);
      const payout = dataOf(style, await post(org.keys.admin, '/payouts', { ...base, destination: randomEvmAddress() }));
      expectError(style, await post(org.keys.member, `/refunds/${payout.id}/approve`), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await post(org.keys.viewer, `/refunds/${payout.id}/cancel`), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await get(other.keys.owner, `/refunds/${payout.id}`), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await post(other.keys.owner, `/refunds/${payout.id}/approve`), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await post(other.keys.owner, `/refunds/${payout.id}/cancel`), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expect(listOf(style, await get(other.keys.viewer, '/refunds', { kind: 'payout' }), 'refunds').items.map((r) => r.id)).to.not.include(payout.id);
      // Viewers read; kind filters the one list.
      const payouts = listOf(style, await get(org.keys.viewer, '/refunds', { kind: 'payout', limit: 100 }), 'refunds');
      expect(payouts.items.map((r) => r.id)).to.include(payout.id);
      expect(payouts.items.every((r) => r.kind === 'payout')).to.equal(true);
      expect(listOf(style, await get(org.keys.viewer, '/refunds', { kind: 'refund' }), 'refunds').items).to.deep.equal([]);
      expectError(style, await get(org.keys.viewer, '/refunds', { kind: 'gift' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(dataOf(style, await post(org.keys.admin, `/refunds/${payout.id}/cancel`, { reason: 'wrong affiliate' }))).to.include({ status: 'cancelled' });
    });

    it('replays a POST /payouts with the same Idempotency-Key; another body under it is refused', async () => {
      const body = { ...base, destination: randomEvmAddress() };
      const send = (b: object) => request(t.app).post('/api/v1/payouts').set('X-API-Key', org.keys.owner).set('Idempotency-Key', `po-${style}`).send(b);
      const first = await send(body);
      const again = await send(body);
      expect(first.status).to.equal(201);
      expect(again.status).to.equal(201);
      expect(dataOf(style, again).id).to.equal(dataOf(style, first).id);
      expectError(style, await send({ ...body, amount: '2' }), 409, 'IDEMPOTENCY_KEY_REUSED', 'Conflict');
      const [{ n }] = await testDb().select({ n: count() }).from(refunds).where(eq(refunds.id, dataOf(style, first).id));
      expect(n).to.equal(1);
    });

    it('the export of approved ones carries payouts (Safe batch and CSV with kind and reason)', async () => {
      const destination = randomEvmAddress();
      const payout = dataOf(style, await post(org.keys.admin, '/payouts', { ...base, amount: '12.5', reason: 'seller 42 payout', destination }));
      await post(org.keys.admin, `/refunds/${payout.id}/approve`);
      const safe = await get(org.keys.viewer, '/refunds/export', { status: 'approved', format: 'safe' });
      expect(safe.status, JSON.stringify(safe.body)).to.equal(200);
      expect(safe.body).to.include({ chainId: '31337' });
      expect(safe.body.meta.description).to.include(payout.id);
      const mine = safe.body.transactions.find((tx: { data: string }) => tx.data.toLowerCase().includes(destination.slice(2).toLowerCase()));
      expect(mine).to.include({ to: payout.tokenAddress, value: '0' });
      const decoded = new Interface(['function transfer(address to, uint256 amount)']).decodeFunctionData('transfer', mine.data);
      expect([decoded[0], decoded[1]]).to.deep.equal([destination, 12_500_000n]);
      const csv = await get(org.keys.viewer, '/refunds/export', { status: 'approved', format: 'csv' });
      expect(csv.status).to.equal(200);
      const lines = csv.text.trim().split(/\r?\n/);
      expect(lines[0]).to.equal('"refundId","address","amount","token","tokenAddress","chain","protocol","orderId","depositReference","transferId","kind","reason"');
      expect(lines).to.include(`"${payout.id}","${destination}","12.5","USDT","${payout.tokenAddress}","${CHAIN}","evm","","","","payout","seller 42 payout"`);
    });

    it('an unclaimed payout expires with payout.expired', async () => {
      const payout = dataOf(style, await post(org.keys.admin, '/payouts', { ...base, expiresAt: new Date(t.clock.now().getTime() + 60_000).toISOString() }));
      t.clock.advance(60_001);
      try {
        await expireDueRefunds(t.deps);
      } finally {
        t.clock.advance(-60_001);
      }
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${payout.id}`))).to.include({ status: 'expired' });
      const expired = (await eventsOf(org.organizationId, 'payout.expired')).map((e) => e.data as Record<string, unknown>);
      expect(expired.find((d) => d.id === payout.id)).to.include({ kind: 'payout', status: 'expired' });
      expect((await eventsOf(org.organizationId, 'refund.expired')).filter((e) => (e.data as { id: string }).id === payout.id)).to.have.length(0);
    });
  });
}
