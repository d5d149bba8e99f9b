import { expect } from 'chai';
import request from 'supertest';
import { eq } from 'drizzle-orm';
import { refunds } from '../../db/schema';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses, randomEvmAddress } from '../helpers/pool';
import { dataOf } from '../helpers/wire';
import { CHAIN, checkpointAt, eventsOf, preserveCheckpoint, tokenEnv } from '../helpers/orders';
import { paidOrder } from '../helpers/refunds';
import { insertTestTransfer } from '../helpers/transfers';
import { claimRefund, expireDueRefunds, refundExpires } from '../../core/refunds/refunds';
import { recomputeRefund } from '../../core/refunds/refund-settlement';

/**
 * Refund expiry now that payments are watched (issue 42): an approved refund expires only when
 * nothing counted was paid toward it and its chain has been scanned past expiresAt, so a payment
 * already made but not yet seen is never cut off; a partly paid one stays approved.
 */

describe('refundExpires (pure)', () => {
  const expiresAt = new Date('2030-01-01T00:00:00Z');
  const after = new Date(expiresAt.getTime() + 1);
  const before = new Date(expiresAt.getTime() - 1);
  const scannedPast = { blockTimestamp: expiresAt };
  const notScanned = { blockTimestamp: before };
  const r = (status: (typeof refunds.$inferSelect)['status'], amountPaid = 0n) => ({ status, expiresAt, amountPaid });

  it('expires requested, awaiting_claim and claimed refunds by the clock alone', () => {
    for (const s of ['requested', 'awaiting_claim', 'claimed'] as const) {
      expect(refundExpires(r(s), null, after), s).to.equal(true);
      expect(refundExpires(r(s), null, before), s).to.equal(false);
    }
  });
  it('expires an approved refund only unpaid, past expiresAt by the clock and scanned past it', () => {
    expect(refundExpires(r('approved'), scannedPast, after)).to.equal(true);
    expect(refundExpires(r('approved'), scannedPast, before)).to.equal(false);
    expect(refundExpires(r('approved'), notScanned, after)).to.equal(false);
    expect(refundExpires(r('approved'), null, after)).to.equal(false);
    expect(refundExpires(r('approved', 1n), scannedPast, after)).to.equal(false);
  });
  it('never expires a completed, expired or cancelled one', () => {
    for (const s of ['completed', 'expired', 'cancelled'] as const) expect(refundExpires(r(s), scannedPast, after), s).to.equal(false);
  });
});

for (const style of STYLES) {
  describe(`refund expiry of approved refunds (style ${style.toUpperCase()})`, () => {
    const t = buildTestApp({ style, env: { ...tokenEnv(), PUBLIC_BASE_URL: 'https://pay.example.com' } });
    let org: TestOrg;
    const post = (key: string, path: string, body: object = {}) => request(t.app).post(`/api/v1${path}`).set('X-API-Key', key).send(body);
    const get = (key: string, path: string) => request(t.app).get(`/api/v1${path}`).set('X-API-Key', key);
    preserveCheckpoint();

    before(async () => {
      org = await createTestOrg(`Refund expiry ${style}`);
      await seedPoolAddresses(org.organizationId, 'evm', 10);
    });

    /** An overpaid order's refund of its excess (3 USDT), claimed and approved through the API, expiring in an hour. */
    async function approvedRefund() {
      const order = await paidOrder(t, org, '10', 13_000_000n);
      const expiresAt = new Date(t.clock.now().getTime() + 3600_000);
      const issued = dataOf(style, await post(org.keys.admin, `/orders/${order.orderId}/refunds`, { reason: 'excess', expiresAt: expiresAt.toISOString() }));
      const destination = randomEvmAddress();
      const claimed = await claimRefund(t.deps, issued.claimUrl.split('/').pop(), destination, destination, null);
      expect(claimed.ok).to.equal(true);
      const approved = await post(org.keys.admin, `/refunds/${issued.id}/approve`);
      expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
      return { order, refund: dataOf(style, approved), destination, expiresAt };
    }

    /** A counted payment of the refund as the scanner records it, and the refund recomputed. */
    async function payment(refundId: string, destination: string, amount: bigint, status: 'pending' | 'confirmed') {
      const [row] = await testDb().select().from(refunds).where(eq(refunds.id, refundId));
      await insertTestTransfer({
        chainId: CHAIN,
        currency: 'USDT',
        tokenAddress: row.tokenAddress,
        amount,
        toAddress: destination,
        refundId,
        counted: true,
        status,
        confirmations: status === 'confirmed' ? 5 : 1,
        blockTimestamp: new Date(row.approvedAt!.getTime() + 1000),
      });
      await t.deps.db.transaction((tx) => recomputeRefund(tx, t.deps, refundId));
    }

    /** Runs the expiry job with the clock past `at`, then puts the clock back. */
    async function expireAfter(at: Date) {
      const step = at.getTime() - t.clock.now().getTime() + 1;
      t.clock.advance(step);
      try {
        return await expireDueRefunds(t.deps);
      } finally {
        t.clock.advance(-step);
      }
    }

    it('an approved unpaid refund expires once its chain is scanned past expiresAt (refund.expired, its amount freed), not before', async () => {
      const { order, refund, expiresAt } = await approvedRefund();
      await checkpointAt(new Date(expiresAt.getTime() - 1000));
      await expireAfter(expiresAt);
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${refund.id}`))).to.include({ status: 'approved' });
      expect(dataOf(style, await get(org.keys.viewer, `/orders/${order.orderId}`))).to.include({ amountRefunded: '3' });

      await checkpointAt(expiresAt);
      await expireAfter(expiresAt);
      const view = dataOf(style, await get(org.keys.viewer, `/refunds/${refund.id}`));
      expect(view).to.include({ status: 'expired', amountPaid: '0' });
      expect(view.expiredAt).to.be.a('string');
      expect(dataOf(style, await get(org.keys.viewer, `/orders/${order.orderId}`))).to.include({ amountRefunded: '0' });
      const expired = (await eventsOf(org.organizationId, 'refund.expired')).map((e) => e.data as Record<string, unknown>);
      expect(expired.find((d) => d.id === refund.id)).to.include({ status: 'expired', orderId: order.orderId });
    });

    it('an approved refund with a payment pending confirmations does not expire, nor does a partly paid one', async () => {
      const pending = await approvedRefund();
      await payment(pending.refund.id, pending.destination, 3_000_000n, 'pending');
      const partly = await approvedRefund();
      await payment(partly.refund.id, partly.destination, 1_000_000n, 'confirmed');
      const latest = pending.expiresAt > partly.expiresAt ? pending.expiresAt : partly.expiresAt;
      await checkpointAt(new Date(latest.getTime() + 3600_000));
      await expireAfter(new Date(latest.getTime() + 3600_000));
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${pending.refund.id}`))).to.include({ status: 'approved', amountPaid: '3' });
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${partly.refund.id}`))).to.include({ status: 'approved', amountPaid: '1' });
      expect(dataOf(style, await get(org.keys.viewer, `/orders/${pending.order.orderId}`))).to.include({ amountRefunded: '3' });
      // The merchant decides about the partly paid one.
      expect(dataOf(style, await post(org.keys.admin, `/refunds/${partly.refund.id}/cancel`, { reason: 'paid the rest by bank' }))).to.include({ status: 'cancelled' });
    });
  });
}
