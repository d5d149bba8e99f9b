import { expect } from 'chai';
import { and, eq } from 'drizzle-orm';
import request from 'supertest';
import { events, refunds } from '../../db/schema';
import { waitForRedis } from '../../core/platform/redis';
import { buildTestApp, createTestOrg, testDb, type TestApp, type TestOrg } from '../helpers/harness';
import { tokenEnv } from '../helpers/orders';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import { paidOrder } from '../helpers/refunds';

/**
 * The claim page's public write under the same drain and abuse tests as the checkout's
 * (checkout-drain.test.ts, checkout-outsider.test.ts): a flood of claim posts from many client IPs
 * is held by the per-IP and per-refund budgets with a friendly 429 page, changes nothing but the
 * one claim, and a refund is claimed once even by concurrent posts; posts from another site, or
 * too large, are refused and spend no budget.
 */
describe('refund claim page under load and abuse', function () {
  this.timeout(120_000);
  const PUBLIC = 'https://pay.example.com';
  let t: TestApp;
  let org: TestOrg;

  before(async () => {
    t = buildTestApp({ env: { ...tokenEnv(), PUBLIC_BASE_URL: PUBLIC, TRUST_PROXY: 'loopback', PAGE_RATE_LIMIT_PER_MINUTE: '1000000' } });
    org = await createTestOrg('Claim drain');
    await seedPoolAddresses(org.organizationId, 'evm', 40);
    await Promise.all([waitForRedis(t.deps.redis), waitForRedis(t.deps.pageLimitRedis)]);
  });

  async function issued() {
    const order = await paidOrder(t, org, '10', 12_500_000n);
    const res = await request(t.app).post(`/api/v1/orders/${order.orderId}/refunds`).set('X-API-Key', org.keys.admin).send({ reason: 'excess' });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return { id: res.body.id as string, path: new URL(res.body.claimUrl).pathname };
  }
  const claimPost = (path: string, ip: string, fields: Record<string, string>) =>
    request(t.app).post(path).set('X-Forwarded-For', ip).set('Origin', PUBLIC).type('form').send(new URLSearchParams(fields).toString());
  const stored = async (id: string) => (await testDb().select().from(refunds).where(eq(refunds.id, id)))[0];
  const claimedEvents = async (id: string) =>
    (await testDb().select().from(events).where(and(eq(events.organizationId, org.organizationId), eq(events.type, 'refund.claimed')))).filter((e) => (e.data as { id: string }).id === id);

  it('200 mistyped claims from one client IP: 30 are answered, the rest get a friendly 429 with Retry-After; nothing is claimed', async () => {
    const refundsToTry = await Promise.all([1, 2].map(() => issued()));
    const statuses: Record<number, number> = {};
    const headings = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const refund = refundsToTry[i % 2];
      // The two entries differ: a typing mistake, refused, changing nothing.
      const res = await claimPost(refund.path, '198.51.100.7', { destination: randomEvmAddress(), confirmation: randomEvmAddress() });
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 429) {
        expect(res.headers['content-type']).to.match(/^text\/html/);
        expect(Number(res.headers['retry-after'])).to.be.greaterThan(0);
        headings.add(/<h1>([^<]*)<\/h1>/.exec(res.text)?.[1] ?? '');
      }
    }
    expect(statuses[400]).to.equal(30);
    expect(statuses[429]).to.equal(170);
    expect([...headings]).to.deep.equal(['Too many attempts']);
    for (const r of refundsToTry) expect((await stored(r.id)).status).to.equal('awaiting_claim');
    // Another client IP still has its own budget: the payer can claim.
    const destination = randomEvmAddress();
    const ok = await claimPost(refundsToTry[0].path, '198.51.100.8', { destination, confirmation: destination });
    expect(ok.status).to.equal(303);
    expect(await stored(refundsToTry[0].id)).to.include({ status: 'claimed', destination });
  });

  it('one refund flooded from 50 client IPs: the per-refund budget holds (20 answered), the rest 429', async () => {
    const refund = await issued();
    const statuses: Record<number, number> = {};
    await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const res = await claimPost(refund.path, `203.0.113.${i + 1}`, { destination: randomEvmAddress(), confirmation: randomEvmAddress() });
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }),
    );
    expect(statuses).to.deep.equal({ 400: 20, 429: 30 });
    expect((await stored(refund.id)).status).to.equal('awaiting_claim');
  });

  it('claimed once: 15 concurrent valid claims with different addresses from different IPs make exactly one claim and one refund.claimed', async () => {
    const refund = await issued();
    const destinations = Array.from({ length: 15 }, () => randomEvmAddress());
    const answers = await Promise.all(destinations.map((d, i) => claimPost(refund.path, `192.0.2.${i + 1}`, { destination: d, confirmation: d })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 303)).to.have.length(1);
    expect(statuses.filter((s) => s === 409)).to.have.length(14);
    const row = await stored(refund.id);
    expect(row.status).to.equal('claimed');
    expect(destinations[statuses.indexOf(303)]).to.equal(row.destination);
    expect(await claimedEvents(refund.id)).to.have.length(1);
  });

  it('posts from another site or too large are refused and spend no budget', async () => {
    const refund = await issued();
    const ip = '198.51.100.99';
    for (let i = 0; i < 40; i++) {
      const d = randomEvmAddress();
      const cross = await request(t.app).post(refund.path).set('X-Forwarded-For', ip).set('Origin', 'https://evil.example').type('form').send(`destination=${d}&confirmation=${d}`);
      expect(cross.status).to.equal(403);
      const big = await request(t.app).post(refund.path).set('X-Forwarded-For', ip).set('Origin', PUBLIC).type('form').send(`destination=${'a'.repeat(200_000)}`);
      expect(big.status).to.equal(413);
    }
    expect((await stored(refund.id)).status).to.equal('awaiting_claim');
    // 80 refused posts later, the same IP still claims: none of them spent its budget.
    const destination = randomEvmAddress();
    const ok = await claimPost(refund.path, ip, { destination, confirmation: destination });
    expect(ok.status).to.equal(303);
    expect(await stored(refund.id)).to.include({ status: 'claimed', destination });
  });
});
