import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import request from 'supertest';
import { orders } from '../../db/schema';
import { buildTestApp, createTestOrg, TEST_DATABASE_URL, TEST_REDIS_URL, testDb } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { closedPort, spawnEntry } from '../helpers/processes';

describe('npm run pay on a finished order', function () {
  this.timeout(60_000);
  const { app } = buildTestApp({ env: tokenEnv() });

  for (const status of ['completed', 'expired'] as const) {
    it(`refuses a ${status} order, saying why, unless --force`, async () => {
      const org = await createTestOrg('Pay guard org');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      const created = await request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send({ orderReference: `pg-${status}`, amount: '3', currency: 'USDT', chainId: CHAIN });
      expect(created.status).to.equal(201);
      const orderId = created.body.orderId ?? created.body.id;
      await testDb().update(orders).set({ status }).where(eq(orders.id, orderId));
      // The chain does not answer here: a payment that gets past the check fails on the RPC instead.
      const env = { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, RPC_URLS_ETHEREUM_LOCAL: `http://127.0.0.1:${await closedPort()}`, ...tokenEnv() };
      const refused = spawnEntry('scripts/local-chain/pay.ts', env, [orderId, '3']);
      expect(await refused.exited).to.equal(1);
      expect(refused.stderr()).to.include(`pay failed: order ${orderId} is ${status}: a payment now would not count toward it`);
      expect(refused.stderr()).to.include('--force');

      const forced = spawnEntry('scripts/local-chain/pay.ts', env, [orderId, '3', '--force']);
      expect(await forced.exited).to.equal(1);
      expect(forced.stderr()).to.not.include(`is ${status}`);
      expect(forced.stderr()).to.match(/does not answer|not deployed/);
    });
  }
});
