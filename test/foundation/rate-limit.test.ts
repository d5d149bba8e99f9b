import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, STYLES } from '../helpers/harness';
import { expectError } from '../helpers/wire';

for (const style of STYLES) {
  describe(`rate limits per API key (style ${style.toUpperCase()})`, () => {
    const env = { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_PER_HOUR: '1000', RATE_LIMIT_PER_DAY: '10000' };
    // Two API instances sharing Redis, as two processes behind a load balancer would.
    const first = buildTestApp({ style, env }).app;
    const second = buildTestApp({ style, env }).app;

    it('holds across two API instances and answers 429 with retryAfter and headers', async () => {
      const org = await createTestOrg('Rate org');
      const get = (app: typeof first) => request(app).get('/api/v1/organizations').set('X-API-Key', org.ownerKey);
      const answers = [];
      for (const app of [first, second, first, second, first]) answers.push(await get(app));
      expect(answers.map((a) => a.status)).to.deep.equal([200, 200, 200, 200, 200]);
      expect(answers.map((a) => a.headers['x-ratelimit-remaining'])).to.deep.equal(['4', '3', '2', '1', '0']);
      expect(answers[0].headers['x-ratelimit-limit']).to.equal('5');
      const reset = Number(answers[0].headers['x-ratelimit-reset']);
      expect(reset).to.be.within(Date.now() / 1000, Date.now() / 1000 + 61);

      const limited = await get(second);
      expectError(style, limited, 429, 'RATE_LIMIT_EXCEEDED', 'RateLimitExceeded');
      expect(limited.body.retryAfter).to.be.a('number').within(1, 60);
      expect(limited.headers['retry-after']).to.equal(String(limited.body.retryAfter));
    });

    it('counts each key on its own', async () => {
      const org = await createTestOrg('Rate org 2');
      for (let i = 0; i < 5; i++) await request(first).get('/api/v1/organizations').set('X-API-Key', org.ownerKey);
      expect((await request(first).get('/api/v1/organizations').set('X-API-Key', org.ownerKey)).status).to.equal(429);
      expect((await request(first).get('/api/v1/config').set('X-API-Key', org.keys.admin)).status).to.equal(200);
    });

    it('is off when disabled (the default in style A)', async () => {
      const { app, config } = buildTestApp({ style: 'a', env: { RATE_LIMIT_ENABLED: '' } });
      expect(config.rateLimit.enabled).to.equal(false);
      const org = await createTestOrg('Unlimited');
      for (let i = 0; i < 3; i++) {
        const res = await request(app).get('/api/v1/organizations').set('X-API-Key', org.ownerKey);
        expect(res.status).to.equal(200);
        expect(res.headers).to.not.have.property('x-ratelimit-limit');
      }
    });
  });
}
