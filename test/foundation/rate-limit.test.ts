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

describe("style A's per-organization limits (description A: 100/min orders, 50/min deposits, 300/min queries)", () => {
  // Per-key limits high, so the organization's are the ones that trip.
  const env = { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_PER_HOUR: '1000000', RATE_LIMIT_PER_DAY: '10000000' };

  it('counts deposits writes per organization across its keys (50 a minute), apart from its queries', async () => {
    const { app } = buildTestApp({ style: 'a', env });
    const org = await createTestOrg('Style A limits');
    const bind = (key: string, i: number) => request(app).post('/api/v1/deposits/unbind').set('X-API-Key', key).send({ depositReference: `nope-${i}` });
    const statuses: number[] = [];
    // Alternating two keys of the organization: one budget.
    for (let i = 0; i < 50; i++) statuses.push((await bind(i % 2 ? org.keys.member : org.keys.admin, i)).status);
    expect(statuses.filter((s) => s === 429)).to.deep.equal([]);
    expect(statuses.at(-1)).to.not.equal(429);
    const limited = await bind(org.keys.owner, 50);
    expectError('a', limited, 429, 'RATE_LIMIT_EXCEEDED', 'RateLimitExceeded');
    expect(limited.body.message).to.include('50 deposits requests per minute per organization');
    expect(limited.headers['x-ratelimit-limit']).to.equal('50');
    // Queries have their own budget; another organization its own.
    expect((await request(app).get('/api/v1/orders').set('X-API-Key', org.keys.viewer)).status).to.equal(200);
    const other = await createTestOrg('Style A other');
    expect((await bind(other.keys.member, 0)).status).to.not.equal(429);
  });

  it('style B keeps per-key limits only', async () => {
    const { app } = buildTestApp({ style: 'b', env });
    const org = await createTestOrg('Style B no org limits');
    for (let i = 0; i < 55; i++) {
      const res = await request(app).post('/api/v1/deposits/unbind').set('X-API-Key', org.keys.member).send({ depositReference: `nope-${i}` });
      expect(res.status).to.not.equal(429);
    }
  });
});
