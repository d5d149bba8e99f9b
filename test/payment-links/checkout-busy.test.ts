import { expect } from 'chai';
import request from 'supertest';
import { poolStatus } from '../../core/pool/queries';
import { buildTestApp, createTestOrg, testDb, testRedis } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf } from '../helpers/wire';

/**
 * A checkout refused for the service's own reason ("busy, retry in a moment") spends none of the
 * visitor's budget (issue 37). Busy is forced deterministically: takes recorded as running in the
 * pool's admission set (as other instances' checkouts in flight would be) stand between the post
 * and the reserve, so it waits for them and answers busy when they do not finish.
 */
describe('payment link checkout: a busy refusal spends no budget', function () {
  this.timeout(120_000);
  const PUBLIC = 'https://pay.example.com';
  const t = buildTestApp({ env: { ...tokenEnv(), PUBLIC_BASE_URL: PUBLIC, TRUST_PROXY: 'loopback' } });

  const post = (path: string) => request(t.app).post(`${path}/orders`).set('X-Forwarded-For', '198.51.100.200').set('Origin', PUBLIC).type('form').send(`choice=USDT%40${CHAIN}`);

  it('after busy refusals the visitor still makes its 10 checkouts an hour, and the 11th is refused', async () => {
    const org = await createTestOrg('Busy Co');
    await seedPoolAddresses(org.organizationId, 'evm', 40);
    const created = dataOf('b', await request(t.app).post('/api/v1/payment-links').set('X-API-Key', org.keys.member).send({ title: 'Drop', amount: '5', currencies: [{ currency: 'USDT', chainId: CHAIN }] }));
    await request(t.app).post(`/api/v1/payment-links/${created.id}/publish`).set('X-API-Key', org.keys.member).expect(200);
    const path = new URL(created.checkoutUrl).pathname;

    // Reserve: 20 % of 40 = 8. 32 takes "running" elsewhere leave 40 − 32 = 8: this one must wait for them.
    const running = `${t.config.redisPrefix}:pw:pool:{${org.organizationId}:evm}:running`;
    const redis = testRedis();
    await redis.zadd(running, ...Array.from({ length: 32 }, (_, i) => [Date.now() + 600_000, `elsewhere-${i}`]).flat());
    try {
      for (let i = 0; i < 3; i++) {
        const busy = await post(path);
        expect(busy.status).to.equal(503);
        expect(Number(busy.headers['retry-after'])).to.equal(2);
        expect(busy.text).to.contain('Please try again in a few minutes');
      }
    } finally {
      await redis.del(running);
    }
    expect((await poolStatus(testDb(), org.organizationId)).evm).to.include({ allocated: 0 });
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await post(path)).status);
    expect(statuses).to.deep.equal([...Array(10).fill(303), 429]);
  });
});
