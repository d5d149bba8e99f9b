import { expect } from 'chai';
import request from 'supertest';
import { recomputeOrder } from '../../core/orders/order-state';
import { buildTestApp, createTestOrg, STYLES, type TestOrg } from '../helpers/harness';
import { insertTestTransfer } from '../helpers/transfers';
import { dataOf, listOf } from '../helpers/wire';
import { CHAIN, eventsOf, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';

for (const style of STYLES) {
  describe(`derived payment fields of orders: amountDue, amountExcess, paymentState (style ${style.toUpperCase()})`, () => {
    const t = buildTestApp({ style, env: tokenEnv() });
    let org: TestOrg;
    const made: Record<string, any> = {};

    before(async () => {
      org = await createTestOrg(`Payment state ${style}`);
      await seedPoolAddresses(org.organizationId, 'evm', 10);
      // amount 10 USDT (6 decimals), paid with: nothing, 4, 10 (2 transfers), 12.5.
      for (const [name, paid] of [['unpaid', []], ['partial', [4_000_000n]], ['paid', [6_000_000n, 4_000_000n]], ['overpaid', [12_500_000n]]] as const) {
        const res = await request(t.app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send({ orderReference: `ps-${name}`, amount: '10', currency: 'USDT', chainId: CHAIN });
        const o = dataOf(style, res);
        for (const [i, amount] of paid.entries()) {
          await insertTestTransfer({
            chainId: CHAIN, currency: 'USDT', amount, toAddress: o.address, orderId: o.orderId, organizationId: org.organizationId,
            counted: true, status: 'confirmed', confirmations: 5, logIndex: i, blockTimestamp: new Date(Date.parse(o.createdAt) + 1000),
          });
        }
        await t.deps.db.transaction((tx) => recomputeOrder(tx, t.deps, o.orderId));
        made[name] = dataOf(style, await request(t.app).get(`/api/v1/orders/${o.orderId}`).set('X-API-Key', org.keys.viewer));
      }
    });

    it('the order object says how much is due or in excess, and its state, without the merchant comparing decimal strings', () => {
      expect(made.unpaid).to.include({ amountReceived: '0', amountDue: '10', amountExcess: '0', paymentState: 'unpaid', status: 'pending' });
      expect(made.partial).to.include({ amountReceived: '4', amountDue: '6', amountExcess: '0', paymentState: 'partial', status: 'pending' });
      expect(made.paid).to.include({ amountReceived: '10', amountDue: '0', amountExcess: '0', paymentState: 'paid', status: 'completed' });
      expect(made.overpaid).to.include({ amountReceived: '12.5', amountDue: '0', amountExcess: '2.5', paymentState: 'overpaid', status: 'completed' });
      // The spec's fields are unchanged; paymentAddress is the spec's other name of address.
      for (const o of Object.values(made)) expect(o.paymentAddress).to.equal(o.address);
    });

    it('lists orders by paymentState (partial orders to follow up)', async () => {
      const list = async (paymentState: string) =>
        listOf(style, await request(t.app).get('/api/v1/orders').query({ paymentState }).set('X-API-Key', org.keys.viewer), 'orders').items.map((o) => o.orderReference);
      expect(await list('partial')).to.deep.equal(['ps-partial']);
      expect(await list('unpaid')).to.deep.equal(['ps-unpaid']);
      expect(await list('paid')).to.deep.equal(['ps-paid']);
      expect(await list('overpaid')).to.deep.equal(['ps-overpaid']);
      const bad = await request(t.app).get('/api/v1/orders').query({ paymentState: 'half' }).set('X-API-Key', org.keys.viewer);
      expect(bad.status).to.equal(400);
    });

    it('order.completed event data carries them too', async () => {
      const completed = (await eventsOf(org.organizationId, 'order.completed')).map((e) => e.data as Record<string, unknown>);
      expect(completed.find((d) => d.orderId === made.overpaid.orderId)).to.include({ amountDue: '0', amountExcess: '2.5', paymentState: 'overpaid' });
      expect(completed.find((d) => d.orderId === made.paid.orderId)).to.include({ paymentState: 'paid' });
    });

    it('documents them in the OpenAPI document', async () => {
      const doc = (await request(t.app).get('/api/v1/openapi.json')).body;
      const text = JSON.stringify(doc.paths['/api/v1/orders/{orderId}'].get.responses['200']);
      for (const field of ['amountDue', 'amountExcess', 'paymentState', 'paymentAddress']) expect(text).to.include(field);
      expect(doc.paths['/api/v1/orders'].get.parameters.map((p: { name: string }) => p.name)).to.include('paymentState');
    });
  });
}
