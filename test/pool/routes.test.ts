import { expect } from 'chai';
import request from 'supertest';
import { HDNodeWallet } from 'ethers';
import { allocatePoolAddress } from '../../core/pool/allocation';
import { tronAddressFromEvm } from '../../core/chains/tron/tron-address';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf, expectError, listOf } from '../helpers/wire';

/** The import/derive result: spec's import response carries `success` itself, so B's flat body has it too; A's envelope has it once. */
function resultOf(style: 'a' | 'b', res: { status: number; body: any }) {
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  if (style === 'a') {
    // A's envelope says success once; data is the bare result.
    const data = dataOf('a', res);
    expect(data).to.not.have.property('success');
    return data;
  }
  expect(res.body.success).to.equal(true);
  return res.body;
}

for (const style of STYLES) {
  describe(`address pool status, list and derive (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style });
    let org: TestOrg;
    let other: TestOrg;
    let evm: string[];
    before(async () => {
      org = await createTestOrg('Routes org');
      other = await createTestOrg('Routes other');
      evm = await seedPoolAddresses(org.organizationId, 'evm', 5, new Date('2026-01-01T00:00:00.000Z'));
      await seedPoolAddresses(org.organizationId, 'tron', 2);
      await seedPoolAddresses(other.organizationId, 'evm', 7);
      await testDb().transaction(async (tx) => {
        await allocatePoolAddress(tx, { organizationId: org.organizationId, protocol: 'evm', holder: { kind: 'order', orderId: 'ord_r1' }, now: new Date() });
        await allocatePoolAddress(tx, { organizationId: org.organizationId, protocol: 'evm', holder: { kind: 'deposit', depositBindingId: 'dr_r2' }, now: new Date() });
      });
    });
    const get = (path: string, key = org.keys.admin) => request(app).get(`/api/v1${path}`).set('X-API-Key', key);

    it('GET /address-pool/status counts per protocol, never another organization\'s', async () => {
      const res = await get('/address-pool/status');
      expect(res.status).to.equal(200);
      expect(dataOf(style, res)).to.deep.equal({
        evm: { total: 5, available: 3, allocated: 1, bound: 1, coolingDown: 0 },
        tron: { total: 2, available: 2, allocated: 0, bound: 0, coolingDown: 0 },
        solana: { total: 0, available: 0, allocated: 0, bound: 0, coolingDown: 0 },
      });
      expect(dataOf(style, await get('/address-pool/status', other.keys.owner)).evm).to.deep.equal({ total: 7, available: 7, allocated: 0, bound: 0, coolingDown: 0 });
    });

    it('GET /address-pool/addresses lists with filters, pagination and sorting', async () => {
      const all = listOf(style, await get('/address-pool/addresses'), 'addresses');
      expect(all.pagination).to.deep.include({ page: 1, limit: 20, total: 7, totalPages: 1 });
      expect(all.items).to.have.length(7);

      const evmAsc = listOf(style, await get('/address-pool/addresses?protocol=evm&sortBy=createdAt&sortOrder=asc&limit=2&page=2'), 'addresses');
      expect(evmAsc.pagination).to.deep.include({ page: 2, limit: 2, total: 5, totalPages: 3 });
      if (style === 'b') expect(evmAsc.pagination.hasMore).to.equal(true);
      expect(evmAsc.items.map((a: any) => a.address)).to.deep.equal([evm[2], evm[3]]);

      const held = listOf(style, await get('/address-pool/addresses?status=allocated'), 'addresses');
      expect(held.items).to.have.length(1);
      expect(held.items[0]).to.deep.include({ address: evm[0], protocol: 'evm', status: 'allocated', mode: 'self_managed', heldBy: { kind: 'order', orderId: 'ord_r1' } });
      expect(new Date(held.items[0].createdAt).toISOString()).to.equal(held.items[0].createdAt);
      const bound = listOf(style, await get('/address-pool/addresses?status=bound'), 'addresses');
      expect(bound.items.map((a: any) => [a.address, a.heldBy])).to.deep.equal([[evm[1], { kind: 'deposit', depositBindingId: 'dr_r2' }]]);

      expectError(style, await get('/address-pool/addresses?status=lost'), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await get('/address-pool/addresses?sortBy=amount'), 400, 'VALIDATION_ERROR', 'ValidationError');
      const theirs = listOf(style, await get('/address-pool/addresses', other.keys.admin), 'addresses');
      expect(theirs.items).to.have.length(7);
      expect(theirs.items.map((a: any) => a.address)).to.not.include.members(evm);
    });

    it('POST /address-pool/derive adds EVM and Tron watch-only addresses from an xpub', async () => {
      const fresh = await createTestOrg('Derive org');
      const xpub = HDNodeWallet.createRandom().neuter().extendedKey;
      const node = HDNodeWallet.fromExtendedKey(xpub).deriveChild(0);
      const res = await request(app).post('/api/v1/address-pool/derive').set('X-API-Key', fresh.keys.admin).send({ protocol: 'evm', masterPublicKey: xpub, start: 5, count: 3 });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const data = resultOf(style, res);
      expect(data).to.deep.include({ imported: 3, skipped: 0, errors: [] });
      expect(data.summary).to.deep.include({ protocol: 'evm', mode: 'derived', derivation_range: { start: 5, end: 7 }, master_public_key: xpub });
      const listed = listOf(style, await get('/address-pool/addresses?sortBy=createdAt&sortOrder=asc', fresh.keys.admin), 'addresses');
      expect(listed.items.map((a: any) => [a.address, a.derivationIndex])).to.have.deep.members([5, 6, 7].map((i) => [node.deriveChild(i).address, i]));

      const again = resultOf(style, await request(app).post('/api/v1/address-pool/derive').set('X-API-Key', fresh.keys.admin).send({ protocol: 'evm', masterPublicKey: xpub, start: 6, count: 3 }));
      expect(again).to.deep.include({ imported: 1, skipped: 2 });

      const tron = resultOf(style, await request(app).post('/api/v1/address-pool/derive').set('X-API-Key', fresh.keys.admin).send({ protocol: 'tron', masterPublicKey: xpub, count: 2 }));
      expect(tron).to.deep.include({ imported: 2 });
      const tronListed = listOf(style, await get('/address-pool/addresses?protocol=tron', fresh.keys.admin), 'addresses');
      expect(tronListed.items.map((a: any) => a.address)).to.have.members([0, 1].map((i) => tronAddressFromEvm(node.deriveChild(i).address)));
    });

    it('POST /address-pool/derive validates its input', async () => {
      const post = (body: object) => request(app).post('/api/v1/address-pool/derive').set('X-API-Key', org.keys.admin).send(body);
      const xpub = HDNodeWallet.createRandom().neuter().extendedKey;
      expectError(style, await post({ protocol: 'solana', masterPublicKey: xpub, count: 1 }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await post({ protocol: 'evm', masterPublicKey: xpub, count: 10_001 }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await post({ protocol: 'evm', masterPublicKey: xpub, count: 0 }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await post({ protocol: 'evm', masterPublicKey: xpub, start: 2147483647, count: 2 }), 400, 'VALIDATION_ERROR', 'ValidationError');
      const bad = await post({ protocol: 'evm', masterPublicKey: 'xpub-not-really', count: 1 });
      expectError(style, bad, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(bad.body.message).to.match(/not a valid extended public key/);
    });

    it('every pool route is Admin/Owner only (Member and Viewer 403) and needs a key (401)', async () => {
      const routes: [string, string, object | undefined][] = [
        ['get', '/address-pool/status', undefined],
        ['get', '/address-pool/addresses', undefined],
        ['post', '/address-pool/import', { protocol: 'evm', mode: 'self_managed', addresses: 'address,protocol\n' }],
        ['post', '/address-pool/derive', { protocol: 'evm', masterPublicKey: 'x', count: 1 }],
      ];
      for (const [method, path, body] of routes) {
        for (const role of ['member', 'viewer'] as const) {
          const req = (request(app) as any)[method](`/api/v1${path}`).set('X-API-Key', org.keys[role]);
          expectError(style, await (body ? req.send(body) : req), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
        }
        const anon = (request(app) as any)[method](`/api/v1${path}`);
        expectError(style, await (body ? anon.send(body) : anon), 401, 'INVALID_API_KEY', 'Unauthorized');
      }
      expect((await get('/address-pool/status', org.keys.owner)).status).to.equal(200);
    });

    it('documents the pool routes, derive included, in the OpenAPI document', async () => {
      const doc = (await request(app).get('/api/v1/openapi.json')).body;
      for (const p of ['/api/v1/address-pool/import', '/api/v1/address-pool/derive']) expect(doc.paths[p].post['x-min-role']).to.equal('admin');
      expect(doc.paths['/api/v1/address-pool/derive'].post.summary).to.match(/beyond the spec/);
      expect(doc.paths['/api/v1/address-pool/addresses'].get.parameters.map((p: any) => p.name)).to.include.members(['protocol', 'status', 'page', 'limit', 'sortBy']);
    });
  });
}
