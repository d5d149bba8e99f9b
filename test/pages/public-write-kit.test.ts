import { expect } from 'chai';
import express, { type Request, type Response } from 'express';
import request from 'supertest';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { checkSameOrigin, PoolReserveGuard, publicBodyReader, PublicWriteRefusal, WriteBudgets } from '../../api/pages/public-write';
import { createTestOrg, TEST_REDIS_PREFIX, testDb, testLogger, testRedis } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { createProducerRedis, waitForRedis } from '../../core/platform/redis';

/**
 * The public write kit on its own (api/pages/public-write/): a small app that posts through its
 * steps as a page does. The checkout's own tests (payment-links-checkout) cover it on /l/<slug>.
 */
describe('public write kit', () => {
  const PUBLIC = 'https://pay.example.com';
  // The API connects at start-up; the test's shared connection on first use.
  before(() => waitForRedis(testRedis()));

  function kitApp(options: { budgets?: WriteBudgets<'ip' | 'thing'> } = {}) {
    const app = express();
    const read = publicBodyReader(512);
    app.post('/thing', async (req: Request, res: Response) => {
      try {
        const body = await read(req, res);
        checkSameOrigin(req, PUBLIC, body.kind);
        await options.budgets?.spend([
          { budget: 'ip', key: req.ip ?? 'unknown' },
          { budget: 'thing', key: 'thing-1' },
        ]);
        res.json({ ok: true, kind: body.kind, fields: body.fields });
      } catch (err) {
        if (!(err instanceof PublicWriteRefusal)) throw err;
        if (err.retryAfter) res.setHeader('Retry-After', String(err.retryAfter));
        res.status(err.status).json({ refused: err.kind });
      }
    });
    return app;
  }

  it('reads a form or a JSON object, refuses other types, malformed and oversized bodies', async () => {
    const app = kitApp();
    const form = await request(app).post('/thing').set('Origin', PUBLIC).type('form').send('a=1&b=two');
    expect(form.status).to.equal(200);
    expect(form.body).to.deep.equal({ ok: true, kind: 'form', fields: { a: '1', b: 'two' } });
    const json = await request(app).post('/thing').set('Origin', PUBLIC).send({ a: 1 });
    expect(json.body).to.deep.include({ kind: 'json' });
    expect((await request(app).post('/thing').set('Origin', PUBLIC).type('text/plain').send('a=1')).body).to.deep.equal({ refused: 'unsupportedType' });
    expect((await request(app).post('/thing').set('Origin', PUBLIC).type('json').send('{"a":')).status).to.equal(400);
    expect((await request(app).post('/thing').set('Origin', PUBLIC).type('json').send('[1]')).status).to.equal(400);
    const big = await request(app).post('/thing').set('Origin', PUBLIC).type('form').send(`a=${'x'.repeat(600)}`);
    expect(big.status).to.equal(413);
    expect(big.body).to.deep.equal({ refused: 'tooLarge' });
  });

  it('refuses cross-site posts: Sec-Fetch-Site, Origin, Referer; a form post that says nothing of its origin', async () => {
    const app = kitApp();
    const post = () => request(app).post('/thing').type('form').send('a=1');
    expect((await post().set('Sec-Fetch-Site', 'same-origin')).status).to.equal(200);
    expect((await post().set('Origin', PUBLIC)).status).to.equal(200);
    expect((await post().set('Referer', `${PUBLIC}/l/abc`)).status).to.equal(200);
    for (const [header, value] of [
      ['Sec-Fetch-Site', 'cross-site'],
      ['Sec-Fetch-Site', 'same-site'],
      ['Origin', 'https://evil.example'],
      ['Origin', 'null'],
      ['Referer', 'https://evil.example/page'],
    ] as const) {
      const res = await post().set(header, value);
      expect(res.status, `${header}: ${value}`).to.equal(403);
      expect(res.body).to.deep.equal({ refused: 'crossSite' });
    }
    expect((await post()).status, 'form without Origin or Referer').to.equal(403);
    // A script's JSON without Origin: not a browser (a browser cannot send it cross-site without a preflight).
    expect((await request(app).post('/thing').send({ a: 1 })).status).to.equal(200);
    // Sec-Fetch-Site wins over a forged-looking Origin.
    expect((await post().set('Origin', PUBLIC).set('Sec-Fetch-Site', 'cross-site')).status).to.equal(403);
  });

  it('spends budgets per client IP and per resource in Redis, shared by every instance, with retryAfter', async () => {
    const keyPrefix = `${TEST_REDIS_PREFIX}:kit:${randomBytes(4).toString('hex')}`;
    const budgets = () => new WriteBudgets({ redis: testRedis(), keyPrefix, logger: testLogger() }, { ip: { points: 3, durationSeconds: 60 }, thing: { points: 5, durationSeconds: 60 } });
    const [one, two] = [kitApp({ budgets: budgets() }), kitApp({ budgets: budgets() })];
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await request(i % 2 ? one : two).post('/thing').set('Origin', PUBLIC).send({})).status);
    expect(statuses).to.deep.equal([200, 200, 200, 429]);
    const limited = await request(one).post('/thing').set('Origin', PUBLIC).send({});
    expect(limited.body).to.deep.equal({ refused: 'tooMany' });
    expect(Number(limited.headers['retry-after'])).to.be.within(1, 60);
  });

  it('fails closed when Redis is unreachable: 503, nothing spent', async () => {
    const down = createProducerRedis('redis://127.0.0.1:1');
    down.on('error', () => {});
    try {
      const budgets = new WriteBudgets({ redis: down, keyPrefix: 'x', logger: testLogger() }, { ip: { points: 3, durationSeconds: 60 }, thing: { points: 5, durationSeconds: 60 } });
      const res = await request(kitApp({ budgets })).post('/thing').set('Origin', PUBLIC).send({});
      expect(res.status).to.equal(503);
      expect(res.body).to.deep.equal({ refused: 'busy' });
    } finally {
      down.disconnect();
    }
  });

  it('the pool reserve guard: concurrent takes leave the reserve free', async () => {
    const org = await createTestOrg('Kit pool');
    await seedPoolAddresses(org.organizationId, 'evm', 20);
    const guard = new PoolReserveGuard({
      redis: testRedis(),
      db: testDb(),
      logger: testLogger(),
      keyPrefix: `${TEST_REDIS_PREFIX}:kit-pool`,
      reservePercent: 25,
      reserveMin: 2,
    });
    expect(guard.reserveOf(20)).to.equal(5);
    expect(guard.reserveOf(4)).to.equal(2);
    // Each take allocates one address as an order would (status allocated), after a pause in which
    // a check-then-take without the admission would let the others pass.
    const take = () =>
      guard.take({ organizationId: org.organizationId, protocol: 'evm' }, async () => {
        await new Promise((r) => setTimeout(r, 5));
        return testDb().execute(
          sql`update pool_addresses set status = 'allocated' where id = (select id from pool_addresses where organization_id = ${org.organizationId} and status = 'available' limit 1 for update skip locked)`,
        );
      });
    const outcomes = await Promise.allSettled(Array.from({ length: 30 }, take));
    const taken = outcomes.filter((o) => o.status === 'fulfilled').length;
    const refused = outcomes.filter((o) => o.status === 'rejected').map((o) => ((o as PromiseRejectedResult).reason as PublicWriteRefusal).kind);
    expect(taken).to.equal(15);
    expect(new Set(refused)).to.deep.equal(new Set(['poolReserve']));
  });
});
