import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { setCheckpoint } from '../../core/chains/checkpoints';
import { dataOf, expectError, listOf } from '../helpers/wire';

for (const style of STYLES) {
  describe(`wire format and validation (style ${style.toUpperCase()})`, () => {
    const { app, deps } = buildTestApp({ style, env: { BODY_LIMIT_BYTES: '2048' } });
    let org: TestOrg;
    before(async () => {
      org = await createTestOrg('Wire org');
    });

    it('wraps success bodies per style', async () => {
      const res = await request(app).get('/api/v1/config/payment_window_minutes').set('X-API-Key', org.ownerKey);
      expect(res.status).to.equal(200);
      const data = dataOf(style, res);
      expect(data).to.include({ key: 'payment_window_minutes', value: 10, isDefault: true });
    });

    it('answers unknown fields with 400 listing them, and changes nothing', async () => {
      const res = await request(app)
        .post(`/api/v1/organizations/${org.organizationId}/api-keys`)
        .set('X-API-Key', org.ownerKey)
        .send({ name: 'x', role: 'viewer', organizationId: 'org_other', id: 'key_mine' });
      expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(res.body.message).to.include('organizationId').and.include('id');
      const list = await request(app).get(`/api/v1/organizations/${org.organizationId}/api-keys`).set('X-API-Key', org.ownerKey);
      expect(listOf(style, list, 'apiKeys').items.map((k: any) => k.name)).to.not.include('x');
    });

    it('lists missing and wrongly typed fields', async () => {
      const res = await request(app).post(`/api/v1/organizations/${org.organizationId}/api-keys`).set('X-API-Key', org.ownerKey).send({ role: 7 });
      expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(res.body.message).to.include('name is required');
      expect(res.body.details).to.deep.include({ field: 'name', message: 'is required' });
      expect(res.body.details.map((d: any) => d.field)).to.include('role');
    });

    it('answers malformed JSON with 400, not 500', async () => {
      const res = await request(app)
        .post(`/api/v1/organizations/${org.organizationId}/api-keys`)
        .set('X-API-Key', org.ownerKey)
        .set('Content-Type', 'application/json')
        .send('{"name": "x",');
      expectError(style, res, 400, 'INVALID_JSON', 'ValidationError');
    });

    it('answers a body over the limit with 413', async () => {
      const res = await request(app)
        .post(`/api/v1/organizations/${org.organizationId}/api-keys`)
        .set('X-API-Key', org.ownerKey)
        .send({ name: 'x'.repeat(5000), role: 'viewer' });
      expectError(style, res, 413, 'PAYLOAD_TOO_LARGE', 'PayloadTooLarge');
    });

    it('every declared route answers a missing key with 401 in the deployment format (route table)', async () => {
      expect(app.routeTable.length).to.be.greaterThan(4);
      for (const route of app.routeTable) {
        const res = await request(app)[route.method](`/api/v1${route.path.replace(/:[A-Za-z0-9_]+/g, 'x')}`);
        expectError(style, res, 401, 'INVALID_API_KEY', 'Unauthorized');
      }
    });

    it('answers unknown endpoints with 404 in the deployment format', async () => {
      expectError(style, await request(app).get('/api/v1/nothing-here').set('X-API-Key', org.ownerKey), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
    });

    it('answers an unknown query parameter with 400', async () => {
      const res = await request(app).get('/api/v1/config').query({ surprise: '1' }).set('X-API-Key', org.ownerKey);
      expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it('serves the OpenAPI document and a docs page without a key', async () => {
      const doc = await request(app).get('/api/v1/openapi.json');
      expect(doc.status).to.equal(200);
      expect(doc.body.openapi).to.equal('3.1.0');
      expect(doc.body.paths).to.have.property('/api/v1/organizations/{id}/api-keys');
      expect(doc.body).to.not.have.property('success');
      const page = await request(app).get('/api/v1/docs');
      expect(page.status).to.equal(200);
      expect(page.text).to.include('/api/v1/config/{key}');
    });

    it('serves /health at the root, never enveloped', async () => {
      // A healthy deployment: every enabled chain scanned just now (with none, /health rightly
      // calls a chain degraded once the app is a minute old, as it is late in a whole run).
      for (const chain of deps.registry.list().filter((c) => c.enabled)) {
        await setCheckpoint(testDb(), { chainId: chain.chainId, blockNumber: 1000, blockHash: `0x${'ab'.repeat(32)}`, blockTimestamp: new Date() });
      }
      const res = await request(app).get('/health');
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ status: 'ok' });
      expect(res.body.version).to.match(/^\d+\.\d+\.\d+/);
      expect(new Date(res.body.timestamp).toISOString()).to.equal(res.body.timestamp);
    });
  });
}
