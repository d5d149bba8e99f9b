import { expect } from 'chai';
import request from 'supertest';
import { and, eq } from 'drizzle-orm';
import { Interface } from 'ethers';
import { auditLog } from '../../db/schema';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses, randomEvmAddress } from '../helpers/pool';
import { dataOf, expectError, listOf } from '../helpers/wire';
import { CHAIN, eventsOf, tokenEnv } from '../helpers/orders';
import { paidOrder } from '../helpers/refunds';
import { insertTestTransfer } from '../helpers/transfers';
import { claimRefund, expireDueRefunds } from '../../core/refunds/refunds';

const REFUND_KEYS = [
  'id', 'kind', 'status', 'amount', 'amountPaid', 'currency', 'chainId', 'protocol', 'tokenAddress', 'orderId', 'depositReference', 'transferId', 'reason',
  'claimUrl', 'destination', 'paymentUri', 'requestedBy', 'issuedBy', 'issuedAt', 'claimedAt', 'approvedBy', 'approvedAt', 'cancelledBy', 'cancelledAt',
  'expiresAt', 'expiredAt', 'txHash', 'completedAt', 'createdAt',
];

for (const style of STYLES) {
  describe(`refunds API (style ${style.toUpperCase()})`, () => {
    const t = buildTestApp({ style, env: { ...tokenEnv(), PUBLIC_BASE_URL: 'https://pay.example.com' } });
    let org: TestOrg;
    let other: TestOrg;
    const post = (key: string, path: string, body: object = {}) => request(t.app).post(`/api/v1${path}`).set('X-API-Key', key).send(body);
    const get = (key: string, path: string, query: Record<string, unknown> = {}) => request(t.app).get(`/api/v1${path}`).query(query).set('X-API-Key', key);
    const orderView = async (orderId: string) => dataOf(style, await get(org.keys.viewer, `/orders/${orderId}`));

    before(async () => {
      org = await createTestOrg(`Refunds ${style}`);
      other = await createTestOrg(`Refunds other ${style}`);
      await seedPoolAddresses(org.organizationId, 'evm', 30);
      await seedPoolAddresses(other.organizationId, 'evm', 5);
    });

    it('refunds an overpaid order its excess by default: awaiting_claim with a claim link, and the order shows amountRefunded', async () => {
      const order = await paidOrder(t, org, '10', 12_500_000n);
      expect(await orderView(order.orderId)).to.include({ status: 'completed', amountExcess: '2.5', amountRefunded: '0' });
      const res = await post(org.keys.admin, `/orders/${order.orderId}/refunds`, { reason: 'paid too much' });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const refund = dataOf(style, res);
      expect(refund).to.have.all.keys(REFUND_KEYS);
      expect(refund).to.include({ status: 'awaiting_claim', amount: '2.5', currency: 'USDT', chainId: CHAIN, protocol: 'evm', orderId: order.orderId, reason: 'paid too much', kind: 'refund' });
      expect(refund.id).to.match(/^rf_[0-9a-z]{26}$/);
      expect(refund.claimUrl).to.match(/^https:\/\/pay\.example\.com\/refund\/[A-Za-z0-9_-]{22}$/);
      expect(refund.claimUrl).to.not.include(refund.id);
      expect(refund.paymentUri).to.equal(null);
      expect(Date.parse(refund.expiresAt) - Date.parse(refund.createdAt)).to.equal(7 * 24 * 3600_000);
      expect(await orderView(order.orderId)).to.include({ amountRefunded: '2.5' });
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${refund.id}`))).to.deep.equal(refund);
      const audit = await testDb().select().from(auditLog).where(and(eq(auditLog.organizationId, org.organizationId), eq(auditLog.target, refund.id)));
      expect(audit.map((a) => a.action)).to.deep.equal(['refund.issued']);
      expect(audit[0].detail).to.include({ reason: 'paid too much', amount: '2.5' });
    });

    it('refunds a paid (not overpaid) order all it received by default, and never more than received minus refunded', async () => {
      const order = await paidOrder(t, org, '10', 10_000_000n);
      const bad = await post(org.keys.owner, `/orders/${order.orderId}/refunds`, { reason: 'r', amount: '10.000001' });
      expectError(style, bad, 400, 'INVALID_AMOUNT', 'ValidationError');
      expect(bad.body.message).to.include('more than is left to refund');
      const part = dataOf(style, await post(org.keys.owner, `/orders/${order.orderId}/refunds`, { reason: 'r', amount: '4' }));
      expect(part.amount).to.equal('4');
      const rest = dataOf(style, await post(org.keys.owner, `/orders/${order.orderId}/refunds`, { reason: 'the rest' }));
      expect(rest.amount).to.equal('6');
      expectError(style, await post(org.keys.owner, `/orders/${order.orderId}/refunds`, { reason: 'again' }), 400, 'INVALID_AMOUNT', 'ValidationError');
      // Cancelled: its amount is free again.
      const cancelled = dataOf(style, await post(org.keys.admin, `/refunds/${part.id}/cancel`, { reason: 'customer kept it' }));
      expect(cancelled).to.include({ status: 'cancelled' });
      expect(cancelled.cancelledBy).to.match(/^api key key_/);
      expect(await orderView(order.orderId)).to.include({ amountRefunded: '6' });
      expect(dataOf(style, await post(org.keys.owner, `/orders/${order.orderId}/refunds`, { reason: 'again' })).amount).to.equal('4');
      expectError(style, await post(org.keys.admin, `/refunds/${part.id}/cancel`), 409, 'INVALID_STATUS_TRANSITION', 'Conflict');
    });

    it('refuses another token or chain, and an order with nothing received', async () => {
      const order = await paidOrder(t, org, '10', 12_000_000n);
      expectError(style, await post(org.keys.owner, `/orders/${order.orderId}/refunds`, { reason: 'r', currency: 'DAI' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      const unpaid = dataOf(style, await post(org.keys.member, '/orders', { orderReference: `unpaid-${style}`, amount: '1', currency: 'USDT', chainId: CHAIN }));
      expectError(style, await post(org.keys.owner, `/orders/${unpaid.orderId}/refunds`, { reason: 'r' }), 400, 'INVALID_AMOUNT', 'ValidationError');
      expectError(style, await post(org.keys.owner, `/orders/${order.orderId}/refunds`, { reason: 'r', expiresAt: '2020-01-01T00:00:00Z' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await post(org.keys.owner, `/orders/${order.orderId}/refunds`, {}), 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it('concurrent refunds of one order never exceed what it received', async () => {
      const order = await paidOrder(t, org, '10', 10_000_000n);
      const answers = await Promise.all(Array.from({ length: 6 }, () => post(org.keys.admin, `/orders/${order.orderId}/refunds`, { reason: 'race', amount: '3' })));
      expect(answers.filter((a) => a.status === 201)).to.have.length(3);
      expect(answers.filter((a) => a.status === 400)).to.have.length(3);
      expect(await orderView(order.orderId)).to.include({ amountRefunded: '9' });
    });

    it('roles: a Member requests (no claim link until an Admin issues it), a Viewer reads, another organization sees nothing', async () => {
      const order = await paidOrder(t, org, '10', 11_000_000n);
      const requested = dataOf(style, await post(org.keys.member, `/orders/${order.orderId}/refunds`, { reason: 'asked by support' }));
      expect(requested).to.include({ status: 'requested', claimUrl: null, issuedBy: null, amount: '1' });
      expectError(style, await post(org.keys.member, `/refunds/${requested.id}/issue`), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await post(org.keys.viewer, `/orders/${order.orderId}/refunds`, { reason: 'x' }), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      const issued = dataOf(style, await post(org.keys.admin, `/refunds/${requested.id}/issue`));
      expect(issued).to.include({ status: 'awaiting_claim' });
      expect(issued.claimUrl).to.be.a('string');
      expectError(style, await get(other.keys.owner, `/refunds/${requested.id}`), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await post(other.keys.owner, `/refunds/${requested.id}/cancel`), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await post(other.keys.owner, `/orders/${order.orderId}/refunds`, { reason: 'x' }), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expect(listOf(style, await get(other.keys.viewer, '/refunds'), 'refunds').items).to.deep.equal([]);
      const mine = listOf(style, await get(org.keys.viewer, '/refunds', { orderId: order.orderId }), 'refunds');
      expect(mine.items.map((r) => r.id)).to.deep.equal([requested.id]);
      expect(mine.pagination.total).to.equal(1);
      const requestedList = listOf(style, await get(org.keys.viewer, '/refunds', { status: 'requested' }), 'refunds');
      expect(requestedList.items).to.deep.equal([]);
      expectError(style, await get(org.keys.viewer, '/refunds', { status: 'paid' }), 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it('replays a creating POST with the same Idempotency-Key', async () => {
      const order = await paidOrder(t, org, '10', 12_000_000n);
      const send = () => request(t.app).post(`/api/v1/orders/${order.orderId}/refunds`).set('X-API-Key', org.keys.owner).set('Idempotency-Key', `rf-${style}`).send({ reason: 'once' });
      const first = await send();
      const again = await send();
      expect(first.status).to.equal(201);
      expect(again.status).to.equal(201);
      expect(dataOf(style, again).id).to.equal(dataOf(style, first).id);
      expect(await orderView(order.orderId)).to.include({ amountRefunded: '2' });
    });

    it('refunds an unattributed transfer, not a credited one', async () => {
      const poolAddress = (await seedPoolAddresses(org.organizationId, 'evm', 1))[0];
      const stray = await insertTestTransfer({ chainId: CHAIN, currency: 'USDT', amount: 5_000_000n, toAddress: poolAddress, organizationId: org.organizationId, status: 'confirmed', confirmations: 9, unattributedReason: 'no_holder' });
      const refund = dataOf(style, await post(org.keys.admin, `/transfers/${stray.id}/refunds`, { reason: 'not ours' }));
      expect(refund).to.include({ amount: '5', transferId: stray.id, orderId: null, status: 'awaiting_claim' });
      expectError(style, await post(org.keys.admin, `/transfers/${stray.id}/refunds`, { reason: 'twice' }), 400, 'INVALID_AMOUNT', 'ValidationError');
      // Being returned: it is not attributed as well.
      const order = dataOf(style, await post(org.keys.member, '/orders', { orderReference: `stray-${style}`, amount: '5', currency: 'USDT', chainId: CHAIN }));
      expectError(style, await post(org.keys.admin, `/transfers/${stray.id}/attribute`, { orderId: order.orderId, reason: 'x' }), 409, 'CONFLICT', 'Conflict');
    });

    it('approve gives what a wallet needs (EIP-681 with the chain id); the exports parse', async () => {
      const order = await paidOrder(t, org, '10', 12_500_000n);
      const refund = dataOf(style, await post(org.keys.admin, `/orders/${order.orderId}/refunds`, { reason: 'excess' }));
      expectError(style, await post(org.keys.admin, `/refunds/${refund.id}/approve`), 409, 'INVALID_STATUS_TRANSITION', 'Conflict');
      const destination = randomEvmAddress();
      const token = refund.claimUrl.split('/').pop();
      const claimed = await claimRefund(t.deps, token, destination.toLowerCase(), destination, '127.0.0.1');
      expect(claimed.ok).to.equal(true);
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${refund.id}`))).to.include({ status: 'claimed', destination });
      expectError(style, await post(org.keys.member, `/refunds/${refund.id}/approve`), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      const approved = dataOf(style, await post(org.keys.owner, `/refunds/${refund.id}/approve`));
      expect(approved).to.include({ status: 'approved' });
      expect(approved.paymentUri).to.equal(`ethereum:${refund.tokenAddress}@31337/transfer?address=${destination}&uint256=2500000`);
      const claimedEvents = (await eventsOf(org.organizationId, 'refund.claimed')).map((e) => e.data as Record<string, unknown>);
      expect(claimedEvents.find((d) => d.id === refund.id)).to.include({ status: 'claimed', destination, amount: '2.5' });

      const safe = await get(org.keys.viewer, '/refunds/export', { status: 'approved', format: 'safe' });
      expect(safe.status, JSON.stringify(safe.body)).to.equal(200);
      expect(safe.body).to.include({ version: '1.0', chainId: '31337' });
      expect(safe.body.meta).to.be.an('object');
      const mineTx = safe.body.transactions.find((tx: { data: string }) => tx.data.toLowerCase().includes(destination.slice(2).toLowerCase()));
      expect(mineTx).to.include({ to: refund.tokenAddress, value: '0' });
      const decoded = new Interface(['function transfer(address to, uint256 amount)']).decodeFunctionData('transfer', mineTx.data);
      expect(decoded[0]).to.equal(destination);
      expect(decoded[1]).to.equal(2_500_000n);

      const csv = await get(org.keys.viewer, '/refunds/export', { status: 'approved', format: 'csv' });
      expect(csv.status).to.equal(200);
      expect(csv.headers['content-type']).to.match(/text\/csv/);
      const lines = csv.text.trim().split(/\r?\n/);
      expect(lines[0]).to.equal('"refundId","address","amount","token","tokenAddress","chain","protocol","orderId","depositReference","transferId","kind","reason"');
      expect(lines.some((l) => l.startsWith(`"${refund.id}","${destination}","2.5","USDT"`))).to.equal(true);
      expectError(style, await get(org.keys.viewer, '/refunds/export', { status: 'approved', format: 'pdf' }), 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it('expires refunds not claimed by their expiresAt (refund.expired) and frees their amount', async () => {
      const order = await paidOrder(t, org, '10', 13_000_000n);
      const refund = dataOf(style, await post(org.keys.admin, `/orders/${order.orderId}/refunds`, { reason: 'excess', expiresAt: new Date(t.clock.now().getTime() + 3600_000).toISOString() }));
      expect(await orderView(order.orderId)).to.include({ amountRefunded: '3' });
      await expireDueRefunds(t.deps);
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${refund.id}`)).status).to.equal('awaiting_claim');
      t.clock.advance(3600_000 + 1);
      try {
        const token = refund.claimUrl.split('/').pop();
        expect(await claimRefund(t.deps, token, randomEvmAddress(), randomEvmAddress(), null)).to.deep.include({ ok: false });
        const run = await expireDueRefunds(t.deps);
        expect(run.expired).to.be.greaterThan(0);
      } finally {
        t.clock.advance(-(3600_000 + 1));
      }
      expect(dataOf(style, await get(org.keys.viewer, `/refunds/${refund.id}`))).to.include({ status: 'expired' });
      expect(await orderView(order.orderId)).to.include({ amountRefunded: '0' });
      const expired = (await eventsOf(org.organizationId, 'refund.expired')).map((e) => e.data as Record<string, unknown>);
      expect(expired.find((d) => d.id === refund.id)).to.include({ status: 'expired', orderId: order.orderId });
    });
  });
}
