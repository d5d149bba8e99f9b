import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, capturedLogLines, createTestOrg, STYLES, testSql, type TestOrg } from '../helpers/harness';
import { dataOf, expectError, listOf } from '../helpers/wire';

const URL_OK = 'http://127.0.0.1:9/hook';

for (const style of STYLES) {
  describe(`webhook endpoints (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style, env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
    let org: TestOrg;
    let other: TestOrg;

    before(async () => {
      org = await createTestOrg('Webhook org');
      other = await createTestOrg('Other webhook org');
    });

    const create = (key: string, body: unknown) => request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', key).send(body as object);

    it('creates an endpoint with a generated secret shown once, and never returns it again', async () => {
      const res = await create(org.keys.admin, { url: URL_OK, events: ['order.completed', 'deposit.pending'] });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const ep = dataOf(style, res);
      expect(ep.id).to.match(/^whe_[0-9a-z]{26}$/);
      expect(ep).to.include({ url: URL_OK, enabled: true, disabledReason: null, failingSince: null });
      expect(ep.events).to.deep.equal(['order.completed', 'deposit.pending']);
      expect(ep.secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);
      expect(ep.createdAt).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

      const got = await request(app).get(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.viewer);
      expect(got.status).to.equal(200);
      expect(dataOf(style, got)).to.not.have.property('secret');
      const list = await request(app).get('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.viewer);
      const { items, pagination } = listOf(style, list, 'endpoints');
      expect(items.map((i) => i.id)).to.include(ep.id);
      expect(pagination).to.include({ page: 1, limit: 20 });
      expect(JSON.stringify(list.body)).to.not.include(ep.secret);
      expect(JSON.stringify(got.body)).to.not.include(ep.secret);
    });

    it('keeps a caller-chosen secret, encrypted at rest and never logged', async () => {
      const secret = `my-own-secret-${style}-0123456789abcdef`;
      // With an Idempotency-Key, so the stored answer (which shows the secret once) is covered too.
      const res = await request(app)
        .post('/api/v1/webhooks/endpoints')
        .set('X-API-Key', org.keys.owner)
        .set('Idempotency-Key', `secret-at-rest-${style}`)
        .send({ url: URL_OK, events: ['order.expired'], secret });
      expect(res.status).to.equal(201);
      const replay = await request(app)
        .post('/api/v1/webhooks/endpoints')
        .set('X-API-Key', org.keys.owner)
        .set('Idempotency-Key', `secret-at-rest-${style}`)
        .send({ url: URL_OK, events: ['order.expired'], secret });
      expect(replay.body).to.deep.equal(res.body);
      const ep = dataOf(style, res);
      expect(ep.secret).to.equal(secret);
      const [row] = await testSql()`select secret_ciphertext from webhook_endpoints where id = ${ep.id}`;
      expect(row.secret_ciphertext).to.match(/^v1\./);
      expect(row.secret_ciphertext).to.not.include(secret);
      // Nowhere in the database in clear: every row of every table, as text.
      const tables = await testSql()`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`;
      for (const { table_name } of tables) {
        const hits = await testSql().unsafe(`select count(*)::int as n from "${table_name}" t where t::text like $1`, [`%${secret}%`]);
        expect(hits[0].n, `secret found in ${table_name}`).to.equal(0);
      }
      expect(capturedLogLines.join('\n')).to.not.include(secret);
    });

    it('rotates the secret (shown in that answer only), updates url/events and re-enables', async () => {
      const ep = dataOf(style, await create(org.keys.admin, { url: URL_OK, events: ['order.completed'] }));
      const rotated = await request(app).put(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.admin).send({ rotateSecret: true });
      expect(rotated.status).to.equal(200);
      const r = dataOf(style, rotated);
      expect(r.secret).to.match(/^whsec_/).and.not.equal(ep.secret);
      const plain = await request(app)
        .put(`/api/v1/webhooks/endpoints/${ep.id}`)
        .set('X-API-Key', org.keys.admin)
        .send({ url: 'http://127.0.0.1:9/other', events: ['deposit.confirmed', 'alert.address_pool_low'], enabled: false });
      const p = dataOf(style, plain);
      expect(p).to.not.have.property('secret');
      expect(p).to.include({ url: 'http://127.0.0.1:9/other', enabled: false, disabledReason: 'Disabled by the organization' });
      expect(p.events).to.deep.equal(['deposit.confirmed', 'alert.address_pool_low']);
      const again = dataOf(style, await request(app).put(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.admin).send({ enabled: true }));
      expect(again).to.include({ enabled: true, disabledReason: null, failingSince: null });
      expect(capturedLogLines.join('\n')).to.not.include(r.secret);
    });

    it('validates events and url', async () => {
      expectError(style, await create(org.keys.admin, { url: URL_OK, events: ['order.paid'] }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await create(org.keys.admin, { url: URL_OK, events: [] }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await create(org.keys.admin, { url: URL_OK }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await create(org.keys.admin, { url: 'not a url', events: ['order.completed'] }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await create(org.keys.admin, { url: 'ftp://example.com/x', events: ['order.completed'] }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await create(org.keys.admin, { url: URL_OK, events: ['order.completed'], secret: 'short' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await create(org.keys.admin, { url: 'https://user:pw@example.com/x', events: ['order.completed'] }), 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it('lets every role read and only Admin/Owner manage', async () => {
      expectError(style, await create(org.keys.member, { url: URL_OK, events: ['order.completed'] }), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await create(org.keys.viewer, { url: URL_OK, events: ['order.completed'] }), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      const ep = dataOf(style, await create(org.keys.admin, { url: URL_OK, events: ['order.completed'] }));
      for (const key of [org.keys.member, org.keys.viewer]) {
        expect((await request(app).get('/api/v1/webhooks/endpoints').set('X-API-Key', key)).status).to.equal(200);
        expect((await request(app).get('/api/v1/webhooks/events').set('X-API-Key', key)).status).to.equal(200);
        expectError(style, await request(app).put(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', key).send({ enabled: false }), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
        expectError(style, await request(app).delete(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', key), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
        expectError(style, await request(app).post(`/api/v1/webhooks/endpoints/${ep.id}/test`).set('X-API-Key', key), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      }
    });

    it("answers 404 for another organization's endpoint and event ids", async () => {
      const ep = dataOf(style, await create(org.keys.admin, { url: URL_OK, events: ['order.completed'] }));
      const test = await request(app).post(`/api/v1/webhooks/endpoints/${ep.id}/test`).set('X-API-Key', org.keys.admin);
      expect(test.status).to.equal(201);
      const evt = dataOf(style, test);
      expect(evt.id).to.match(/^evt_/);
      const k = other.keys.owner;
      expectError(style, await request(app).get(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', k), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await request(app).put(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', k).send({ enabled: false }), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await request(app).delete(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', k), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await request(app).post(`/api/v1/webhooks/endpoints/${ep.id}/test`).set('X-API-Key', k), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await request(app).post(`/api/v1/webhooks/events/${evt.id}/redeliver`).set('X-API-Key', k), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      const theirs = await request(app).get('/api/v1/webhooks/events').query({ endpoint: ep.id }).set('X-API-Key', k);
      expect(listOf(style, theirs, 'events').items).to.deep.equal([]);
      const theirEndpoints = listOf(style, await request(app).get('/api/v1/webhooks/endpoints').set('X-API-Key', k), 'endpoints').items;
      expect(theirEndpoints.map((e) => e.id)).to.not.include(ep.id);
      const mine = listOf(style, await request(app).get('/api/v1/webhooks/events').query({ endpoint: ep.id }).set('X-API-Key', org.keys.viewer), 'events');
      expect(mine.items.map((e) => e.id)).to.deep.equal([evt.id]);
    });

    it('deletes an endpoint: gone from reads, 404 afterwards', async () => {
      const ep = dataOf(style, await create(org.keys.admin, { url: URL_OK, events: ['order.completed'] }));
      const del = await request(app).delete(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.admin);
      expect(del.status).to.equal(200);
      expect(dataOf(style, del)).to.not.have.property('secret');
      expectError(style, await request(app).get(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.admin), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await request(app).delete(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.admin), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
    });

    it('validates the events list query', async () => {
      expectError(style, await request(app).get('/api/v1/webhooks/events').query({ status: 'weird' }).set('X-API-Key', org.keys.viewer), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await request(app).get('/api/v1/webhooks/events').query({ limit: 101 }).set('X-API-Key', org.keys.viewer), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await request(app).get('/api/v1/webhooks/events').query({ type: 'nope' }).set('X-API-Key', org.keys.viewer), 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it('documents the webhook routes in the OpenAPI document', async () => {
      const doc = (await request(app).get('/api/v1/openapi.json')).body;
      expect(doc.paths['/api/v1/webhooks/endpoints']).to.have.keys('get', 'post');
      expect(doc.paths['/api/v1/webhooks/endpoints/{id}']).to.have.keys('get', 'put', 'delete');
      expect(doc.paths['/api/v1/webhooks/endpoints/{id}/test'].post.summary).to.match(/webhook\.test/);
      expect(doc.paths['/api/v1/webhooks/events/{id}/redeliver'].post.description).to.match(/event id/);
      expect(doc.paths['/api/v1/webhooks/events'].get.parameters.map((p: { name: string }) => p.name)).to.include.members(['type', 'status', 'endpoint', 'page', 'limit']);
    });
  });
}
