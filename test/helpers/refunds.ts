import request from 'supertest';
import { recomputeOrder } from '../../core/orders/order-state';
import type { TestApp, TestOrg } from './harness';
import { insertTestTransfer } from './transfers';
import { CHAIN } from './orders';

let seq = 0;

/**
 * An order of `amount` USDT on the local EVM chain paid `received` base units by one confirmed,
 * counted transfer, recomputed (completed when it reaches its amount). Returns the order's wire id and address.
 */
export async function paidOrder(t: TestApp, org: TestOrg, amount: string, received: bigint): Promise<{ orderId: string; address: string }> {
  const res = await request(t.app)
    .post('/api/v1/orders')
    .set('X-API-Key', org.keys.member)
    .send({ orderReference: `refund-${Date.now().toString(36)}-${++seq}`, amount, currency: 'USDT', chainId: CHAIN });
  const o = t.config.apiStyle === 'a' ? res.body.data : res.body;
  await insertTestTransfer({
    chainId: CHAIN,
    currency: 'USDT',
    amount: received,
    toAddress: o.address,
    orderId: o.orderId,
    organizationId: org.organizationId,
    counted: true,
    status: 'confirmed',
    confirmations: 5,
    blockTimestamp: new Date(Date.parse(o.createdAt) + 1000),
  });
  await t.deps.db.transaction((tx) => recomputeOrder(tx, t.deps, o.orderId));
  return { orderId: o.orderId, address: o.address };
}
