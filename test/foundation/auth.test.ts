import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, STYLES, testSql, type TestOrg } from '../helpers/harness';
import { dataOf, expectError, listOf } from '../helpers/wire';

for (const style of STYLES) {
  describe(`auth and roles (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style });
    let org: TestOrg;
    let other: TestOrg;

    before(async () => {
      org = await createTestOrg('Auth org');
      other = await createTestOrg('Other org');
    });

    it('accepts both Authorization: Bearer and X-API-Key', async () => {
      const a = await request(app).get('/api/v1/organizations').set('Authorization', `Bearer ${org.ownerKey}`);
      const b = await request(app).get('/api/v1/organizations').set('X-API-Key', org.ownerKey);
      expect(listOf(style, a, 'organizations').items.map((o) => o.id)).to.deep.equal([org.organizationId]);
      expect(listOf(style, b, 'organizations').items.map((o) => o.id)).to.deep.equal([org.organizationId]);
    });

    it('answers 401 for a missing, malformed or unknown key', async () => {
      expectError(style, await request(app).get('/api/v1/organizations'), 401, 'INVALID_API_KEY', 'Unauthorized');
      expectError(style, await request(app).get('/api/v1/organizations').set('Authorization', 'Basic abc'), 401, 'INVALID_API_KEY', 'Unauthorized');
      expectError(style, await request(app).get('/api/v1/organizations').set('X-API-Key', 'not-a-key'), 401, 'INVALID_API_KEY', 'Unauthorized');
      expectError(style, await request(app).get('/api/v1/organizations').set('X-API-Key', `pk_${'x'.repeat(43)}`), 401, 'INVALID_API_KEY', 'Unauthorized');
    });

    it('stops a revoked key at once', async () => {
      const created = await request(app)
        .post(`/api/v1/organizations/${org.organizationId}/api-keys`)
        .set('X-API-Key', org.keys.admin)
        .send({ name: 'short-lived', role: 'member' });
      const key = dataOf(style, created);
      expect(created.status).to.equal(201);
      expect(key.key).to.match(/^pk_/);
      expect((await request(app).get('/api/v1/config').set('X-API-Key', key.key)).status).to.equal(403); // member, but authenticated
      const revoked = await request(app).delete(`/api/v1/api-keys/${key.id}`).set('X-API-Key', org.keys.admin);
      expect(revoked.status).to.equal(200);
      expect(dataOf(style, revoked).revokedAt).to.be.a('string');
      expectError(style, await request(app).get('/api/v1/config').set('X-API-Key', key.key), 401, 'INVALID_API_KEY', 'Unauthorized');
    });

    it('shows a key once and stores only its hash', async () => {
      const created = await request(app)
        .post(`/api/v1/organizations/${org.organizationId}/api-keys`)
        .set('X-API-Key', org.ownerKey)
        .send({ name: 'hash check', role: 'viewer' });
      const { key, id } = dataOf(style, created);
      const list = await request(app).get(`/api/v1/organizations/${org.organizationId}/api-keys`).set('X-API-Key', org.ownerKey);
      const listed = listOf(style, list, 'apiKeys').items.find((k: any) => k.id === id);
      expect(listed).to.not.have.property('key');
      expect(JSON.stringify(listOf(style, list, 'apiKeys').items)).to.not.include(key);
      const rows = await testSql()`select * from api_keys where id = ${id}`;
      expect(JSON.stringify(rows)).to.not.include(key);
      expect(rows[0].key_hash).to.match(/^[0-9a-f]{64}$/);
    });

    it('forbids an Admin to create Owner keys or revoke them, and any key to grant above its own role', async () => {
      const asAdmin = await request(app)
        .post(`/api/v1/organizations/${org.organizationId}/api-keys`)
        .set('X-API-Key', org.keys.admin)
        .send({ name: 'x', role: 'owner' });
      expectError(style, asAdmin, 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      const owners = await request(app).get(`/api/v1/organizations/${org.organizationId}/api-keys`).set('X-API-Key', org.ownerKey);
      const ownerKeyId = listOf(style, owners, 'apiKeys').items.find((k: any) => k.role === 'owner').id;
      expectError(style, await request(app).delete(`/api/v1/api-keys/${ownerKeyId}`).set('X-API-Key', org.keys.admin), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      const asMember = await request(app)
        .post(`/api/v1/organizations/${org.organizationId}/api-keys`)
        .set('X-API-Key', org.keys.member)
        .send({ name: 'x', role: 'member' });
      expectError(style, asMember, 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
    });

    it('refuses to revoke the last Owner key, but allows it when another Owner key exists', async () => {
      const fresh = await createTestOrg('Owners');
      const list = await request(app).get(`/api/v1/organizations/${fresh.organizationId}/api-keys`).set('X-API-Key', fresh.ownerKey);
      const ownerKeyId = listOf(style, list, 'apiKeys').items.find((k: any) => k.role === 'owner').id;
      expectError(style, await request(app).delete(`/api/v1/api-keys/${ownerKeyId}`).set('X-API-Key', fresh.ownerKey), 409, 'LAST_OWNER_KEY', 'Conflict');
      const second = await request(app)
        .post(`/api/v1/organizations/${fresh.organizationId}/api-keys`)
        .set('X-API-Key', fresh.ownerKey)
        .send({ name: 'second owner', role: 'owner' });
      expect(second.status).to.equal(201);
      const secondKey = dataOf(style, second).key;
      const revoked = await request(app).delete(`/api/v1/api-keys/${ownerKeyId}`).set('X-API-Key', secondKey);
      expect(revoked.status).to.equal(200);
      expectError(style, await request(app).get('/api/v1/organizations').set('X-API-Key', fresh.ownerKey), 401, 'INVALID_API_KEY', 'Unauthorized');
    });

    it("answers 404 for another organization's ids", async () => {
      expectError(style, await request(app).get(`/api/v1/organizations/${other.organizationId}/api-keys`).set('X-API-Key', org.ownerKey), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(
        style,
        await request(app).post(`/api/v1/organizations/${other.organizationId}/api-keys`).set('X-API-Key', org.ownerKey).send({ name: 'x', role: 'viewer' }),
        404,
        'RESOURCE_NOT_FOUND',
        'NotFound',
      );
      const otherKeys = await request(app).get(`/api/v1/organizations/${other.organizationId}/api-keys`).set('X-API-Key', other.ownerKey);
      const otherKeyId = listOf(style, otherKeys, 'apiKeys').items[0].id;
      expectError(style, await request(app).delete(`/api/v1/api-keys/${otherKeyId}`).set('X-API-Key', org.ownerKey), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      const stillWorks = await request(app).get('/api/v1/organizations').set('X-API-Key', other.ownerKey);
      expect(stillWorks.status).to.equal(200);
    });

    it('every admin-only route answers 403 to Member and Viewer keys (route table)', async () => {
      const adminRoutes = app.routeTable.filter((r) => r.minRole === 'admin' || r.minRole === 'owner');
      expect(adminRoutes.length).to.be.greaterThan(3);
      for (const route of adminRoutes) {
        const path = route.path.replace(/:[A-Za-z0-9_]+/g, (m) => (m === ':id' ? org.organizationId : 'x'));
        for (const role of ['member', 'viewer'] as const) {
          const res = await request(app)[route.method](`/api/v1${path}`).set('X-API-Key', org.keys[role]).send(route.body ? {} : undefined);
          expect(res.status, `${route.method.toUpperCase()} ${route.path} as ${role}`).to.equal(403);
        }
      }
    });

    it('every member-only route answers 403 to Viewer keys (route table)', async () => {
      const memberRoutes = app.routeTable.filter((r) => r.minRole === 'member');
      for (const route of memberRoutes) {
        const path = route.path.replace(/:[A-Za-z0-9_]+/g, 'x');
        const res = await request(app)[route.method](`/api/v1${path}`).set('X-API-Key', org.keys.viewer).send(route.body ? {} : undefined);
        expect(res.status, `${route.method.toUpperCase()} ${route.path} as viewer`).to.equal(403);
      }
    });
  });
}
