import { expect } from 'chai';
import request from 'supertest';
import { CONFIG_KEYS } from '../../core/organizations/org-config';
import { buildTestApp, createTestOrg, STYLES, type TestOrg } from '../helpers/harness';
import { randomEvmAddress } from '../helpers/pool';
import { dataOf, expectError, listOf } from '../helpers/wire';

/**
 * Administration answers in the API's list shape (issue 19, "Shapes"): GET /config,
 * GET /organizations and GET /organizations/:id/api-keys; DELETE /config/:key; the pool
 * import's `success` once in A and on its validation failure in B.
 */
for (const style of STYLES) {
  describe(`administration list shapes and config reset (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style });
    let org: TestOrg;
    before(async () => {
      org = await createTestOrg('Shapes org');
    });
    const get = (path: string, key = org.keys.admin) => request(app).get(`/api/v1${path}`).set('X-API-Key', key);

    it('GET /config is a paginated list of every known key', async () => {
      const all = listOf(style, await get('/config'), 'config');
      expect(all.items.map((e) => e.key)).to.deep.equal(CONFIG_KEYS.map((k) => k.key));
      expect(all.pagination).to.deep.include({ page: 1, limit: 20, total: CONFIG_KEYS.length, totalPages: 1 });
      if (style === 'b') expect(all.pagination.hasMore).to.equal(false);

      const second = listOf(style, await get('/config?page=2&limit=2'), 'config');
      expect(second.items.map((e) => e.key)).to.deep.equal(CONFIG_KEYS.slice(2, 4).map((k) => k.key));
      expect(second.pagination).to.deep.include({ page: 2, limit: 2, total: CONFIG_KEYS.length, totalPages: Math.ceil(CONFIG_KEYS.length / 2) });
      if (style === 'b') expect(second.pagination.hasMore).to.equal(CONFIG_KEYS.length > 4);

      expectError(style, await get('/config?limit=0'), 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it("GET /organizations is a list holding the caller's organization", async () => {
      const res = await get('/organizations');
      expect(res.status).to.equal(200);
      const list = listOf(style, res, 'organizations');
      expect(list.items).to.have.length(1);
      expect(list.items[0]).to.include({ id: org.organizationId, name: 'Shapes org' });
      expect(new Date(list.items[0].createdAt).toISOString()).to.equal(list.items[0].createdAt);
      expect(list.pagination).to.deep.include({ page: 1, total: 1, totalPages: 1 });
      const past = listOf(style, await get('/organizations?page=2'), 'organizations');
      expect(past.items).to.deep.equal([]);
      expect(past.pagination.total).to.equal(1);
    });

    it('GET /organizations/:id/api-keys pages through the keys, oldest first', async () => {
      const path = `/organizations/${org.organizationId}/api-keys`;
      const all = listOf(style, await get(path), 'apiKeys');
      expect(all.items.map((k) => k.role)).to.have.members(['owner', 'admin', 'member', 'viewer']);
      expect(all.pagination).to.deep.include({ page: 1, limit: 20, total: 4, totalPages: 1 });
      for (const k of all.items) expect(k).to.not.have.property('key');

      const pages = [];
      for (let page = 1; page <= 2; page++) {
        const p = listOf(style, await get(`${path}?page=${page}&limit=2`), 'apiKeys');
        expect(p.pagination).to.deep.include({ page, limit: 2, total: 4, totalPages: 2 });
        if (style === 'b') expect(p.pagination.hasMore).to.equal(page === 1);
        pages.push(...p.items.map((k) => k.id));
      }
      expect(pages).to.deep.equal(all.items.map((k) => k.id));

      const other = await createTestOrg('Shapes other');
      expectError(style, await get(`/organizations/${other.organizationId}/api-keys`), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
    });

    it('DELETE /config/:key resets a key to its default', async () => {
      const key = 'payment_window_minutes';
      const def = CONFIG_KEYS.find((k) => k.key === key)!.default;
      const put = await request(app).put(`/api/v1/config/${key}`).set('X-API-Key', org.keys.admin).send({ value: 33 });
      expect(dataOf(style, put)).to.include({ value: 33, isDefault: false });

      const reset = await request(app).delete(`/api/v1/config/${key}`).set('X-API-Key', org.keys.admin);
      expect(reset.status, JSON.stringify(reset.body)).to.equal(200);
      expect(dataOf(style, reset)).to.include({ key, value: def, isDefault: true, updatedAt: null });
      expect(dataOf(style, await get(`/config/${key}`))).to.include({ value: def, isDefault: true });

      // Again: nothing to reset, same answer.
      const again = await request(app).delete(`/api/v1/config/${key}`).set('X-API-Key', org.keys.admin);
      expect(dataOf(style, again)).to.include({ key, value: def, isDefault: true });

      expectError(style, await request(app).delete('/api/v1/config/no.such.key').set('X-API-Key', org.keys.admin), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await request(app).delete(`/api/v1/config/${key}`).set('X-API-Key', org.keys.member), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
    });

    it("the pool import carries success once on success and on its validation failure", async () => {
      const post = (addresses: string) =>
        request(app).post('/api/v1/address-pool/import').set('X-API-Key', org.keys.admin).send({ protocol: 'evm', mode: 'self_managed', addresses });
      const ok = await post(`address,protocol,derivation_index,master_public_key\n${randomEvmAddress()},evm,,`);
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expect(ok.body.success).to.equal(true);
      if (style === 'a') expect(ok.body.data).to.not.have.property('success');
      expect(style === 'a' ? ok.body.data.imported : ok.body.imported).to.equal(1);

      const bad = await post('address,protocol,derivation_index,master_public_key\n0x1234,evm,,');
      expect(bad.status).to.equal(400);
      expect(bad.body).to.include({ success: false });
      expect(bad.body.details).to.be.an('array').with.length(1);
      if (style === 'b') expect(bad.body).to.include({ code: 'VALIDATION_ERROR', statusCode: 400 });
      else expect(bad.body).to.include({ error: 'ValidationError' });

      // A schema failure of the import body is a validation failure too.
      const missing = await request(app).post('/api/v1/address-pool/import').set('X-API-Key', org.keys.admin).send({ protocol: 'evm' });
      expect(missing.status).to.equal(400);
      expect(missing.body).to.include({ success: false });

      // Other routes' errors keep the style's plain error body.
      expectError(style, await get('/config/no.such.key'), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
    });

    it('documents the shapes in the OpenAPI document', async () => {
      const doc = (await request(app).get('/api/v1/openapi.json')).body;
      const listSchema = (path: string) => doc.paths[path].get.responses['200'].content['application/json'].schema;
      for (const [path, plural] of [
        ['/api/v1/config', 'config'],
        ['/api/v1/organizations', 'organizations'],
        ['/api/v1/organizations/{id}/api-keys', 'apiKeys'],
      ]) {
        const schema = listSchema(path);
        if (style === 'a') expect(schema.properties.data.properties).to.have.all.keys(plural, 'pagination');
        else expect(schema.properties).to.have.all.keys('data', 'pagination');
        expect(doc.paths[path].get.parameters.map((p: { name: string }) => p.name)).to.include.members(['page', 'limit']);
      }
      expect(doc.paths['/api/v1/config/{key}'].delete.summary).to.match(/default/);
      const importOp = doc.paths['/api/v1/address-pool/import'].post;
      expect(importOp.responses['400'].content['application/json'].schema.properties.success).to.deep.equal({ const: false });
      const importOk = importOp.responses['200'].content['application/json'].schema;
      if (style === 'a') expect(importOk.properties.data.properties).to.not.have.property('success');
      else expect(importOk.properties.success).to.deep.include({ const: true });
    });
  });
}
