import { expect } from 'chai';
import request from 'supertest';
import { ApiKeyCache } from '../../api/key-cache';
import { buildTestApp, createTestOrg, testConfig, testLogger, testRedis, testSql, type TestApp, type TestOrg } from '../helpers/harness';
import { eventually } from '../helpers/wait';
import { dataOf, expectError } from '../helpers/wire';

/**
 * Each API instance remembers recently used keys (api/key-cache.ts). Two instances of the same
 * deployment here: a key revoked through one stops working on the other at once.
 */
describe('API key cache across API instances', () => {
  let first: TestApp;
  let second: TestApp;
  let org: TestOrg;

  const newKey = async (name: string): Promise<{ id: string; key: string }> => {
    const res = await request(first.app).post(`/api/v1/organizations/${org.organizationId}/api-keys`).set('X-API-Key', org.keys.admin).send({ name, role: 'member' });
    expect(res.status).to.equal(201);
    return dataOf('b', res);
  };
  const listOrders = (app: TestApp, key: string) => request(app.app).get('/api/v1/orders').set('X-API-Key', key);
  /** Marks a key revoked in the database only, as if the announcement never came. */
  const revokeSilently = (id: string) => testSql()`update api_keys set revoked_at = now() where id = ${id}`;

  before(async () => {
    // Entries that outlive every test here: a key forgotten meanwhile was forgotten because of the
    // revocation announcement (or the channel dropping), never because its entry expired.
    first = buildTestApp({ style: 'b', keyCacheTtlMs: 3600_000 });
    second = buildTestApp({ style: 'b', keyCacheTtlMs: 3600_000 });
    org = await createTestOrg('Key cache org');
    await Promise.all([first.deps.keyCache.start(), second.deps.keyCache.start()]);
  });

  it('serves a key it has seen without asking the database again', async () => {
    const { id, key } = await newKey('remembered');
    expect((await listOrders(second, key)).status).to.equal(200);
    await revokeSilently(id);
    // Remembered: the silent revocation is not seen yet (this is what the announcement is for)...
    expect((await listOrders(second, key)).status).to.equal(200);
    // ...while an instance that never saw the key asks the database.
    expectError('b', await listOrders(first, key), 401, 'INVALID_API_KEY', 'Unauthorized');
  });

  it('stops a key revoked through another instance by the announcement, not by its entry expiring', async () => {
    const { id, key } = await newKey('revoked elsewhere');
    expect((await listOrders(second, key)).status).to.equal(200);
    expect((await listOrders(second, key)).status).to.equal(200);
    const revoked = await request(first.app).delete(`/api/v1/api-keys/${id}`).set('X-API-Key', org.keys.admin);
    expect(revoked.status).to.equal(200);
    // The revoking instance answers once Redis has taken the announcement; the other forgets the key
    // when its subscriber reads it (the cache promises milliseconds, not "before the revoke answers"),
    // and here both share one event loop, so the next request can overtake the message. Its entry
    // lives an hour: only the announcement can make it forget the key within this wait.
    await eventually(async () => (await listOrders(second, key)).status === 401, 15_000, 'the second instance to forget the revoked key');
    expectError('b', await listOrders(second, key), 401, 'INVALID_API_KEY', 'Unauthorized');
    expectError('b', await listOrders(first, key), 401, 'INVALID_API_KEY', 'Unauthorized');
  });

  it('forgets every key while its revocation channel is down, and remembers again once it is back', async () => {
    const { id, key } = await newKey('channel down');
    expect((await listOrders(second, key)).status).to.equal(200);
    const clients = await testRedis().client('LIST');
    const ids = String(clients)
      .split('\n')
      .filter((line) => line.includes('name=stablegate-api-key-cache'))
      .map((line) => /\bid=(\d+)/.exec(line)![1]);
    expect(ids.length).to.be.greaterThan(0);
    for (const clientId of ids) await testRedis().client('KILL', 'ID', clientId);
    await waitFor(() => !second.deps.keyCache.isListening);
    await revokeSilently(id);
    expectError('b', await listOrders(second, key), 401, 'INVALID_API_KEY', 'Unauthorized');

    await second.deps.keyCache.start();
    const other = await newKey('after reconnection');
    expect((await listOrders(second, other.key)).status).to.equal(200);
    await revokeSilently(other.id);
    expect((await listOrders(second, other.key)).status).to.equal(200);
  });
});

describe('API key cache entries', () => {
  it('live at most ttlMs, and unknown keys are never remembered', async () => {
    // A clock only this test moves: the entry's age does not depend on how busy the machine is.
    let nowMs = Date.parse('2030-01-01T00:00:00Z');
    const clock = { now: () => new Date(nowMs) };
    const cache = new ApiKeyCache({ redisUrl: testConfig().redisUrl, channel: `${testConfig().redisPrefix}:ttl-check`, logger: testLogger(), ttlMs: 100, clock });
    try {
      await cache.start();
      let loads = 0;
      const record = { id: 'key_1', organizationId: 'org_1', role: 'member' as const, keyHash: 'h', revokedAt: null };
      const load = async () => {
        loads++;
        return record;
      };
      expect(await cache.find('h', load)).to.deep.equal(record);
      expect(await cache.find('h', load)).to.deep.equal(record);
      nowMs += 99; // still younger than ttlMs
      expect(await cache.find('h', load)).to.deep.equal(record);
      expect(loads).to.equal(1);
      nowMs += 1; // ttlMs old: expired
      await cache.find('h', load);
      expect(loads).to.equal(2);
      let unknownLoads = 0;
      const unknown = async () => {
        unknownLoads++;
        return null;
      };
      await cache.find('u', unknown);
      await cache.find('u', unknown);
      expect(unknownLoads).to.equal(2);
    } finally {
      await cache.close();
    }
  });
});

const waitFor = (condition: () => boolean, timeoutMs = 5000) => eventually(condition, timeoutMs, 'the key cache', 10);
