import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, STYLES, type TestOrg } from '../helpers/harness';
import { expectError } from '../helpers/wire';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';

/** Error bodies that tell a newcomer what to change (issue 30, item 10). */
for (const style of STYLES) {
  describe(`error messages that say what to do (style ${style.toUpperCase()})`, () => {
    const { app, config } = buildTestApp({ style, env: tokenEnv() });
    let org: TestOrg;
    before(async () => {
      org = await createTestOrg(`Errors ${style}`);
      await seedPoolAddresses(org.organizationId, 'evm', 5);
    });
    const order = (overrides: Record<string, unknown> = {}) => ({ orderReference: `e-${Math.random().toString(36).slice(2)}`, amount: '1', currency: 'USDT', chainId: CHAIN, ...overrides });

    it('a form-encoded body is told to send application/json, not "Malformed JSON"', async () => {
      const res = await request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).type('form').send('orderReference=a&amount=1&currency=USDT');
      expectError(style, res, 400, 'INVALID_JSON', 'ValidationError');
      expect(res.body.message).to.include('Content-Type: application/json');
      expect(res.body.message).to.include('application/x-www-form-urlencoded');
      expect(res.body.message).to.not.match(/Malformed/);
      // Real malformed JSON still says so.
      const broken = await request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).set('Content-Type', 'application/json').send('{"a":');
      expect(broken.body.message).to.match(/Malformed JSON/);
    });

    it('a too-long metadata value gives one clause, not the whole anyOf list', async () => {
      const res = await request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send(order({ metadata: { note: 'x'.repeat(501) } }));
      expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(res.body.details).to.deep.equal([{ field: 'metadata.note', message: 'must NOT have more than 500 characters' }]);
      expect(res.body.message).to.not.match(/anyOf|must be number|must be boolean/);
      const wrongType = await request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send(order({ metadata: { note: [1] } }));
      expect(wrongType.body.details).to.deep.equal([{ field: 'metadata.note', message: 'must be string, number, boolean or null' }]);
    });

    it('413 states the limit', async () => {
      const res = await request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send(order({ orderReference: 'x'.repeat(config.bodyLimitBytes) }));
      expectError(style, res, 413, 'PAYLOAD_TOO_LARGE', 'PayloadTooLarge');
      expect(res.body.message).to.include(`at most ${config.bodyLimitBytes} bytes`);
      expect(res.body.limitBytes).to.equal(config.bodyLimitBytes);
    });

    it('Authorization: pk_… without the scheme says to add "Bearer "', async () => {
      const res = await request(app).get('/api/v1/orders').set('Authorization', org.keys.viewer);
      expectError(style, res, 401, 'INVALID_API_KEY', 'Unauthorized');
      expect(res.body.message).to.include('add "Bearer "');
      expect(res.body.message).to.not.include(org.keys.viewer);
      expect((await request(app).get('/api/v1/orders').set('Authorization', `Bearer ${org.keys.viewer}`)).status).to.equal(200);
    });

    it('INVALID_AMOUNT carries details like the other validation errors and speaks of token units', async () => {
      for (const amount of [10, '1.1234567', '0', 'ten']) {
        const res = await request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send(order({ amount }));
        expectError(style, res, 400, 'INVALID_AMOUNT', 'ValidationError');
        expect(res.body.message, String(amount)).to.include('token units');
        expect(res.body.details).to.have.length(1);
        expect(res.body.details[0].field).to.equal('amount');
      }
    });
  });
}
