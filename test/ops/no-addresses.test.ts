import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import request from 'supertest';
import { buildTestApp, capturedLogLines, createTestOrg, STYLES, testDb } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { expectError } from '../helpers/wire';

for (const style of STYLES) {
  describe(`NO_AVAILABLE_ADDRESSES carries Retry-After and is a warning (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style, env: tokenEnv() });
    const order = () => ({ orderReference: `r-${Math.random().toString(36).slice(2)}`, amount: '1', currency: 'USDT', chainId: CHAIN });

    async function emptyOrgWithCooldowns(secondsFromNow: number[]) {
      const org = await createTestOrg('Empty pool org');
      const addresses = await seedPoolAddresses(org.organizationId, 'evm', secondsFromNow.length);
      for (const [i, s] of secondsFromNow.entries()) {
        await testDb().execute(sql`update pool_addresses set status = 'cooldown', cooldown_until = now() + make_interval(secs => ${s}) where address = ${addresses[i]}`);
      }
      return org;
    }

    it('Retry-After is the seconds until the next cooldown ends; the log lines are warnings with the request id', async () => {
      const org = await emptyOrgWithCooldowns([600, 90]);
      const before = capturedLogLines.length;
      const res = await request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send(order());
      expectError(style, res, 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
      const retryAfter = Number(res.headers['retry-after']);
      expect(retryAfter).to.be.within(85, 90);
      expect(res.body.retryAfter).to.equal(retryAfter);
      const lines = capturedLogLines.slice(before).map((l) => JSON.parse(l));
      const warning = lines.find((l) => l.code === 'NO_AVAILABLE_ADDRESSES');
      expect(warning).to.include({ level: 'warn', organizationId: org.organizationId, retryAfter });
      expect(warning.req.id).to.equal(res.headers['x-request-id']);
      const completed = lines.find((l) => l.msg === 'request completed' && l.req?.id === res.headers['x-request-id']);
      expect(completed.level).to.equal('warn');
      expect(lines.some((l) => l.level === 'error')).to.equal(false);
    });

    it('is capped at 300 seconds, and 60 when every address is held but none is cooling down', async () => {
      const far = await emptyOrgWithCooldowns([86_400]);
      const a = await request(app).post('/api/v1/orders').set('X-API-Key', far.keys.member).send(order());
      expect(a.status).to.equal(503);
      expect(a.headers['retry-after']).to.equal('300');
      const held = await createTestOrg('Held pool org');
      await seedPoolAddresses(held.organizationId, 'evm', 1);
      await request(app).post('/api/v1/orders').set('X-API-Key', held.keys.member).send(order()).expect(201);
      const b = await request(app).post('/api/v1/orders').set('X-API-Key', held.keys.member).send(order());
      expect(b.status).to.equal(503);
      expect(b.headers['retry-after']).to.equal('60');
      expect(b.body.message).to.match(/retry after 60 seconds/);
    });

    it('an empty pool (none of the protocol at all) has no Retry-After and says to import or derive addresses', async () => {
      const none = await createTestOrg('No pool org');
      const b = await request(app).post('/api/v1/orders').set('X-API-Key', none.keys.member).send(order());
      expectError(style, b, 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
      expect(b.headers['retry-after']).to.equal(undefined);
      expect(b.body.retryAfter).to.equal(undefined);
      expect(b.body.message).to.match(/evm address pool is empty: import addresses .*address-pool\/import.* or derive them .*address-pool\/derive/);
      expect(b.body.message).to.not.match(/retry/i);
      const bind = await request(app).post('/api/v1/deposits/bind').set('X-API-Key', none.keys.member).send({ depositReference: 'u-1', protocol: 'evm' });
      expectError(style, bind, 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
      expect(bind.headers['retry-after']).to.equal(undefined);
    });
  });
}
