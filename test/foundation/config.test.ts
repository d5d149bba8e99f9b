import { expect } from 'chai';
import request from 'supertest';
import { databasePoolSizeFor, queryPoolSizeFor, loadConfig, ConfigError } from '../../core/platform/config';
import { buildTestApp, createTestOrg, STYLES, type TestOrg } from '../helpers/harness';
import { dataOf, expectError, listOf } from '../helpers/wire';

describe('configuration at start-up', () => {
  it('has working local defaults', () => {
    const c = loadConfig({});
    expect(c.databaseUrl).to.equal('postgres://postgres@127.0.0.1:5432/stablegate');
    expect(c.redisUrl).to.equal('redis://127.0.0.1:6379');
    expect(c.port).to.equal(3000);
    expect(c.apiStyle).to.equal('b');
    expect(c.network).to.equal('local');
    expect(c.rateLimit.enabled).to.equal(true);
    expect(loadConfig({ API_STYLE: 'a' }).rateLimit.enabled).to.equal(false);
  });

  it('sizes the database pool by process kind unless DATABASE_POOL_SIZE says otherwise', () => {
    const unset = loadConfig({});
    expect(databasePoolSizeFor(unset, 'api')).to.equal(6);
    expect(queryPoolSizeFor(unset, 'api')).to.equal(5);
    expect(databasePoolSizeFor(unset, 'worker')).to.equal(10);
    expect(databasePoolSizeFor(loadConfig({ DATABASE_POOL_SIZE: '  ' }), 'api')).to.equal(6);
    const set = loadConfig({ DATABASE_POOL_SIZE: '8' });
    expect(databasePoolSizeFor(set, 'api')).to.equal(8);
    expect(databasePoolSizeFor(set, 'worker')).to.equal(8);
    // A worker's LISTEN connection (webhook fast path) is one of them, outside the query pool, and
    // so is an API's (the payment pages' memory of open orders).
    expect(queryPoolSizeFor(set, 'worker')).to.equal(7);
    expect(queryPoolSizeFor(set, 'api')).to.equal(7);
    expect(queryPoolSizeFor(loadConfig({ DATABASE_POOL_SIZE: '8', WEBHOOK_FAST_PATH: 'false' }), 'worker')).to.equal(8);
    for (const bad of ['1', 'many', '2.5', '201']) {
      expect(() => loadConfig({ DATABASE_POOL_SIZE: bad }), bad).to.throw(ConfigError, 'DATABASE_POOL_SIZE must be an integer from 2 to 200');
    }
  });

  it('bounds every database call: the API by DATABASE_REQUEST_TIMEOUT_MS, workers and the long maintenance statements by their own', () => {
    const defaults = loadConfig({});
    expect([defaults.databaseRequestTimeoutMs, defaults.databaseWorkerTimeoutMs, defaults.databaseMaintenanceTimeoutMs]).to.deep.equal([3000, 30_000, 1_800_000]);
    expect(() => loadConfig({ DATABASE_WORKER_TIMEOUT_MS: '500' })).to.throw(ConfigError, 'DATABASE_WORKER_TIMEOUT_MS must be an integer from 1000 to 600000');
    expect(() => loadConfig({ DATABASE_WORKER_TIMEOUT_MS: '60000', DATABASE_MAINTENANCE_TIMEOUT_MS: '30000' })).to.throw(
      ConfigError,
      'DATABASE_MAINTENANCE_TIMEOUT_MS (30000) must be at least DATABASE_WORKER_TIMEOUT_MS (60000)',
    );
  });

  it('alerts on stopped head looks after HEAD_LOOK_ALERT_AFTER_SECONDS, never within the spacing of the looks themselves', () => {
    expect(loadConfig({}).headLookAlertMs).to.equal(30_000);
    expect(loadConfig({ HEAD_LOOK_ALERT_AFTER_SECONDS: '5' }).headLookAlertMs).to.equal(5000);
    for (const bad of ['0', 'soon', '1.5', '86401']) {
      expect(() => loadConfig({ HEAD_LOOK_ALERT_AFTER_SECONDS: bad }), bad).to.throw(ConfigError, 'HEAD_LOOK_ALERT_AFTER_SECONDS must be an integer from 1 to 86400');
    }
    // Looks come up to 1.5 intervals apart: a threshold below two would call every pause a gap.
    expect(() => loadConfig({ HEAD_LOOK_ALERT_AFTER_SECONDS: '3', HEAD_LOOK_INTERVAL_MS: '2000' })).to.throw(
      ConfigError,
      'HEAD_LOOK_ALERT_AFTER_SECONDS (3) must be at least twice HEAD_LOOK_INTERVAL_MS (2000 ms)',
    );
    expect(loadConfig({ HEAD_LOOK_ALERT_AFTER_SECONDS: '4', HEAD_LOOK_INTERVAL_MS: '2000' }).headLookAlertMs).to.equal(4000);
  });

  it('reports every invalid setting at once, clearly', () => {
    try {
      loadConfig({ PORT: 'eighty', API_STYLE: 'c', NETWORK: 'mainnet', DATABASE_URL: 'mysql://x' });
      expect.fail('should throw');
    } catch (err) {
      expect(err).to.be.instanceOf(ConfigError);
      const msg = (err as Error).message;
      expect(msg).to.include('PORT must be an integer');
      expect(msg).to.include('API_STYLE must be one of a, b');
      expect(msg).to.include('SECRET_ENCRYPTION_KEY is required when NETWORK=mainnet');
      expect(msg).to.include('DATABASE_URL must be a postgres or postgresql URL');
    }
  });
});

for (const style of STYLES) {
  describe(`organization configuration endpoints (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style });
    let org: TestOrg;
    before(async () => {
      org = await createTestOrg('Config org');
    });

    it('sets and reads a known key', async () => {
      const put = await request(app).put('/api/v1/config/address_pool.cooldown_minutes').set('X-API-Key', org.keys.admin).send({ value: 45 });
      expect(put.status).to.equal(200);
      expect(dataOf(style, put)).to.include({ key: 'address_pool.cooldown_minutes', value: 45, isDefault: false });
      const get = await request(app).get('/api/v1/config/address_pool.cooldown_minutes').set('X-API-Key', org.keys.admin);
      expect(dataOf(style, get).value).to.equal(45);
      const all = await request(app).get('/api/v1/config').set('X-API-Key', org.keys.admin);
      expect(listOf(style, all, 'config').items.find((e: any) => e.key === 'payment_window_minutes').value).to.equal(10);
    });

    it('answers an unknown key with 404 and a wrong type with 400, changing nothing', async () => {
      expectError(style, await request(app).get('/api/v1/config/no.such.key').set('X-API-Key', org.ownerKey), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await request(app).put('/api/v1/config/no.such.key').set('X-API-Key', org.ownerKey).send({ value: 1 }), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await request(app).put('/api/v1/config/payment_window_minutes').set('X-API-Key', org.ownerKey).send({ value: 'ten' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await request(app).put('/api/v1/config/payment_window_minutes').set('X-API-Key', org.ownerKey).send({ value: 0 }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await request(app).put('/api/v1/config/default_order_success_url').set('X-API-Key', org.ownerKey).send({ value: 'ftp://x' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await request(app).put('/api/v1/config/payment_window_minutes').set('X-API-Key', org.ownerKey).send({ value: { nested: 1 } }), 400, 'VALIDATION_ERROR', 'ValidationError');
      const get = await request(app).get('/api/v1/config/payment_window_minutes').set('X-API-Key', org.ownerKey);
      expect(dataOf(style, get)).to.include({ value: 10, isDefault: true });
    });

    it('keeps organizations apart', async () => {
      const other = await createTestOrg('Config other');
      await request(app).put('/api/v1/config/payment_window_minutes').set('X-API-Key', org.ownerKey).send({ value: 25 });
      const theirs = await request(app).get('/api/v1/config/payment_window_minutes').set('X-API-Key', other.ownerKey);
      expect(dataOf(style, theirs).value).to.equal(10);
    });
  });
}
