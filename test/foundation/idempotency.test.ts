import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, knownSecrets, STYLES, testSql, type TestOrg } from '../helpers/harness';
import { dataOf, expectError } from '../helpers/wire';

for (const style of STYLES) {
  describe(`Idempotency-Key on creating POSTs (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style });
    let org: TestOrg;
    before(async () => {
      org = await createTestOrg('Idempotency org');
    });
    const createKey = (key: string, body: object) =>
      request(app).post(`/api/v1/organizations/${org.organizationId}/api-keys`).set('X-API-Key', org.ownerKey).set('Idempotency-Key', key).send(body);
    const countKeysNamed = async (name: string) =>
      (await testSql()`select count(*)::int as n from api_keys where organization_id = ${org.organizationId} and name = ${name}`)[0].n;

    it('replays the original status and body for the same key and body', async () => {
      const first = await createKey(`replay-${style}`, { name: `replayed-${style}`, role: 'viewer' });
      const second = await createKey(`replay-${style}`, { role: 'viewer', name: `replayed-${style}` }); // same body, other key order
      expect(first.status).to.equal(201);
      expect(second.status).to.equal(201);
      expect(second.body).to.deep.equal(first.body);
      expect(second.headers['idempotent-replayed']).to.equal('true');
      expect(await countKeysNamed(`replayed-${style}`)).to.equal(1);
      // The stored answer holds a key shown once: it must not rest in clear.
      const key = dataOf(style, first).key as string;
      knownSecrets.add(key);
      const stored = await testSql()`select response_body::text as body from idempotency_records where organization_id = ${org.organizationId} and key = ${`replay-${style}`}`;
      expect(stored).to.have.length(1);
      expect(stored[0].body).to.not.include(key);
      expect(stored[0].body).to.not.include(`replayed-${style}`);
    });

    it('answers 409 for the same key with another body, creating nothing', async () => {
      await createKey(`conflict-${style}`, { name: `conflict-a-${style}`, role: 'viewer' });
      const res = await createKey(`conflict-${style}`, { name: `conflict-b-${style}`, role: 'viewer' });
      expectError(style, res, 409, 'IDEMPOTENCY_KEY_REUSED', 'Conflict');
      expect(await countKeysNamed(`conflict-b-${style}`)).to.equal(0);
    });

    it('scopes keys per organization', async () => {
      const other = await createTestOrg('Idempotency other');
      const mine = await createKey(`scoped-${style}`, { name: `scoped-${style}`, role: 'viewer' });
      const theirs = await request(app)
        .post(`/api/v1/organizations/${other.organizationId}/api-keys`)
        .set('X-API-Key', other.ownerKey)
        .set('Idempotency-Key', `scoped-${style}`)
        .send({ name: `scoped-${style}`, role: 'viewer' });
      expect(theirs.status).to.equal(201);
      expect(dataOf(style, theirs).id).to.not.equal(dataOf(style, mine).id);
    });

    it('creates exactly once under 20 concurrent identical requests; the others replay or wait', async () => {
      const results = await Promise.all(Array.from({ length: 20 }, () => createKey(`concurrent-${style}`, { name: `concurrent-${style}`, role: 'viewer' })));
      const statuses = results.map((r) => r.status);
      expect(statuses.every((s) => s === 201 || s === 409), statuses.join(',')).to.equal(true);
      for (const r of results.filter((x) => x.status === 409)) expectError(style, r, 409, 'IDEMPOTENCY_IN_PROGRESS', 'Conflict');
      const created = results.filter((r) => r.status === 201).map((r) => dataOf(style, r).id);
      expect(new Set(created).size).to.equal(1);
      expect(await countKeysNamed(`concurrent-${style}`)).to.equal(1);
    });

    it('remembers a 4xx answer: the same key and body replay it', async () => {
      const bad = await createKey(`retry-${style}`, { name: `retry-${style}`, role: 'viewer', extra: 1 });
      expect(bad.status).to.equal(400);
      // A 4xx answer is an answer: the same body replays it.
      const again = await createKey(`retry-${style}`, { name: `retry-${style}`, role: 'viewer', extra: 1 });
      expect(again.status).to.equal(400);
      expect(again.body).to.deep.equal(bad.body);
    });

    it('rejects a malformed Idempotency-Key', async () => {
      const res = await createKey('x'.repeat(300), { name: 'long key', role: 'viewer' });
      expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
    });
  });
}
