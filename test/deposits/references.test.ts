import { expect } from 'chai';
import { and, eq } from 'drizzle-orm';
import request from 'supertest';
import { setConfigValue } from '../../core/organizations/org-config';
import { addressAssignments, depositBindingChains, depositBindings, poolAddresses } from '../../db/schema';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import { dataOf, expectError } from '../helpers/wire';
import { tokenEnv } from '../helpers/deposits';

const V1 = '/api/v1';

async function poolRow(address: string) {
  const [row] = await testDb().select().from(poolAddresses).where(eq(poolAddresses.address, address));
  return row;
}
async function bindingRows(organizationId: string) {
  return testDb().select().from(depositBindings).where(eq(depositBindings.organizationId, organizationId));
}

for (const style of STYLES) {
  describe(`deposit references: bind, register, unbind (style ${style.toUpperCase()})`, () => {
    const env = tokenEnv();
    const { app, clock } = buildTestApp({ style, env });
    let org: TestOrg;
    let pool: string[];
    const key = () => org.keys.member;
    const post = (path: string, body: unknown, k = key()) => request(app).post(V1 + path).set('X-API-Key', k).send(body as object);
    const get = (path: string, k = key()) => request(app).get(V1 + path).set('X-API-Key', k);
    const del = (path: string, k = key()) => request(app).delete(V1 + path).set('X-API-Key', k);

    beforeEach(async () => {
      org = await createTestOrg('Deposit org');
      pool = await seedPoolAddresses(org.organizationId, 'evm', 3);
    });

    it('POST /deposits/bind: 201 with the exact binding, then 200 with the same binding (idempotent)', async () => {
      const res = await post('/deposits/bind', { depositReference: 'user-42', protocol: 'evm', metadata: { userId: 42 } });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const data = dataOf(style, res);
      expect(data).to.have.all.keys(
        'depositReference', 'protocol', 'address', 'depositAddress', 'monitoredChains', 'monitoringTargets', 'metadata', 'createdAt', 'bindingCreatedAt',
      );
      expect(data).to.include({ depositReference: 'user-42', protocol: 'evm', address: pool[0], depositAddress: pool[0] });
      expect(data.metadata).to.deep.equal({ userId: 42 });
      expect(data.monitoredChains).to.deep.equal(['ethereum-local']);
      expect(data.monitoringTargets).to.have.deep.members([
        { chain: 'ethereum-local', contract: env.TOKEN_ETHEREUM_LOCAL_USDT, token: 'USDT' },
        { chain: 'ethereum-local', contract: env.TOKEN_ETHEREUM_LOCAL_USDC, token: 'USDC' },
        { chain: 'ethereum-local', contract: env.TOKEN_ETHEREUM_LOCAL_DAI, token: 'DAI' },
      ]);
      expect(data.createdAt).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(data.bindingCreatedAt).to.equal(data.createdAt);
      expect((await poolRow(pool[0])).status).to.equal('bound');
      // The address assignment names the binding: transfers are attributed to it by block time.
      const [binding] = await bindingRows(org.organizationId);
      const assignments = await testDb().select().from(addressAssignments).where(eq(addressAssignments.organizationId, org.organizationId));
      expect(assignments).to.have.length(1);
      expect(assignments[0]).to.include({ kind: 'deposit', depositBindingId: binding.id, poolAddressId: (await poolRow(pool[0])).id, orderId: null, endedAt: null });

      const again = await post('/deposits/bind', { depositReference: 'user-42', protocol: 'evm', metadata: { other: true } });
      expect(again.status).to.equal(200);
      expect(dataOf(style, again)).to.deep.equal(data);
      expect(await bindingRows(org.organizationId)).to.have.length(1);
      expect((await poolRow(pool[1])).status).to.equal('available');
    });

    it('binds concurrently requested identical references once', async () => {
      const results = await Promise.all([1, 2, 3, 4].map(() => post('/deposits/bind', { depositReference: 'race', protocol: 'evm' })));
      expect(results.map((r) => r.status).sort()).to.deep.equal([200, 200, 200, 201]);
      expect(new Set(results.map((r) => dataOf(style, r).address)).size).to.equal(1);
      expect(await bindingRows(org.organizationId)).to.have.length(1);
      const bound = await testDb().select().from(poolAddresses).where(and(eq(poolAddresses.organizationId, org.organizationId), eq(poolAddresses.status, 'bound')));
      expect(bound).to.have.length(1);
      const assignments = await testDb().select().from(addressAssignments).where(eq(addressAssignments.organizationId, org.organizationId));
      expect(assignments).to.have.length(1);
    });

    it('binds protocol solana to a base58 pool address watched on every enabled Solana chain; a Solana chain of another network is INVALID_CHAIN, storing nothing', async () => {
      const [address] = await seedPoolAddresses(org.organizationId, 'solana', 1);
      const res = await post('/deposits/bind', { depositReference: 'sol-user-1', protocol: 'solana' });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const data = dataOf(style, res);
      expect(data.address).to.equal(address);
      expect(data.monitoredChains).to.deep.equal(['solana-local']);
      expectError(style, await post('/deposits/references', { depositReference: 'user-1', currency: 'USDT', chainId: 'solana-devnet' }), 400, 'INVALID_CHAIN', 'ValidationError');
      expect(await bindingRows(org.organizationId)).to.have.length(1);
    });

    it('answers 503 NO_AVAILABLE_ADDRESSES with an empty pool, storing nothing', async () => {
      const empty = await createTestOrg('Empty pool org');
      const a = await post('/deposits/bind', { depositReference: 'user-1', protocol: 'evm' }, empty.keys.member);
      expectError(style, a, 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
      const b = await post('/deposits/references', { depositReference: 'user-1', currency: 'USDT', chainId: 'ethereum-local' }, empty.keys.member);
      expectError(style, b, 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
      expect(await bindingRows(empty.organizationId)).to.have.length(0);
      expect(await testDb().select().from(addressAssignments).where(eq(addressAssignments.organizationId, empty.organizationId))).to.have.length(0);
      expectError(style, await get('/deposits/references/user-1', empty.keys.member), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
    });

    it('validates reference length, metadata pairs and fields', async () => {
      const cases: unknown[] = [
        { depositReference: 'x'.repeat(256), protocol: 'evm' },
        { depositReference: '', protocol: 'evm' },
        { depositReference: 'u', protocol: 'evm', metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])) },
        { depositReference: 'u', protocol: 'bitcoin' },
        { depositReference: 'u' },
        { depositReference: 'u', protocol: 'evm', address: pool[0] },
      ];
      for (const body of cases) expectError(style, await post('/deposits/bind', body), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await post('/deposits/references', { depositReference: 'x'.repeat(256), currency: 'USDT', chainId: 'ethereum-local' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      const ok = await post('/deposits/bind', { depositReference: 'x'.repeat(255), protocol: 'evm', metadata: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i])) });
      expect(ok.status).to.equal(201);
      expect(await bindingRows(org.organizationId)).to.have.length(1);
    });

    it('forbids Viewer keys to bind, register or unbind (403), but lets them read', async () => {
      await post('/deposits/bind', { depositReference: 'user-1', protocol: 'evm' });
      const v = org.keys.viewer;
      expectError(style, await post('/deposits/bind', { depositReference: 'user-2', protocol: 'evm' }, v), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await post('/deposits/references', { depositReference: 'user-2', currency: 'USDT', chainId: 'ethereum-local' }, v), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await post('/deposits/unbind', { depositReference: 'user-1' }, v), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await del('/deposits/references/user-1', v), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expect((await get('/deposits/references/user-1', v)).status).to.equal(200);
      expect((await get('/deposits/references', v)).status).to.equal(200);
      expect((await get('/deposits', v)).status).to.equal(200);
      expect(await bindingRows(org.organizationId)).to.have.length(1);
      expect((await poolRow(pool[0])).status).to.equal('bound');
    });

    it('POST /deposits/references: 201 with the exact registration; the same chain again is 409 DUPLICATE_DEPOSIT_REFERENCE', async () => {
      const res = await post('/deposits/references', { depositReference: 'user-7', currency: 'USDT', chainId: 'ethereum-local', metadata: { plan: 'gold' } });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const data = dataOf(style, res);
      expect(data).to.have.all.keys('depositReference', 'currency', 'chainId', 'protocol', 'address', 'monitoredChains', 'metadata', 'createdAt');
      expect(data).to.include({ depositReference: 'user-7', currency: 'USDT', chainId: 'ethereum-local', protocol: 'evm', address: pool[0] });
      expect(data.metadata).to.deep.equal({ plan: 'gold' });
      expect(data.monitoredChains).to.deep.equal(['ethereum-local']);

      const dup = await post('/deposits/references', { depositReference: 'user-7', currency: 'DAI', chainId: 'ethereum-local' });
      expectError(style, dup, 409, 'DUPLICATE_DEPOSIT_REFERENCE', 'Conflict');
      expectError(style, await post('/deposits/references', { depositReference: 'user-8', currency: 'USDT', chainId: 'nowhere-chain' }), 400, 'INVALID_CHAIN', 'ValidationError');
      expectError(style, await post('/deposits/references', { depositReference: 'user-8', currency: 'EUR', chainId: 'ethereum-local' }), 400, 'INVALID_CURRENCY', 'ValidationError');
      expect(await bindingRows(org.organizationId)).to.have.length(1);
      expect((await poolRow(pool[1])).status).to.equal('available');
    });

    it('POST /deposits/unbind {depositReference}: releases to cooldown for address_pool.unbind_cooldown_minutes', async () => {
      await setConfigValue(testDb(), org.organizationId, 'address_pool.unbind_cooldown_minutes', 45);
      await post('/deposits/bind', { depositReference: 'user-1', protocol: 'evm' });
      const before = clock.now().getTime();
      const res = await post('/deposits/unbind', { depositReference: 'user-1' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const expected = { depositReference: 'user-1', unboundAddresses: 1, addresses: [{ protocol: 'evm', address: pool[0] }] };
      if (style === 'a') expect(res.body).to.deep.equal({ success: true, data: expected, message: 'Unbound 1 address(es)' });
      else expect(res.body).to.deep.equal({ success: true, message: 'Unbound 1 address(es)', ...expected });

      const row = await poolRow(pool[0]);
      expect(row.status).to.equal('cooldown');
      const cooldownMs = row.cooldownUntil!.getTime() - before;
      expect(cooldownMs).to.be.within(45 * 60_000 - 5_000, 45 * 60_000 + 5_000);
      const [assignment] = await testDb().select().from(addressAssignments).where(eq(addressAssignments.organizationId, org.organizationId));
      expect(assignment.endedAt).to.be.instanceOf(Date);

      expectError(style, await get('/deposits/references/user-1'), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      expectError(style, await post('/deposits/unbind', { depositReference: 'user-1' }), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      // Binding again takes a fresh address: the cooling one is not reused.
      const rebound = await post('/deposits/bind', { depositReference: 'user-1', protocol: 'evm' });
      expect(rebound.status).to.equal(201);
      expect(dataOf(style, rebound).address).to.equal(pool[1]);
    });

    it('POST /deposits/unbind {address, protocol}: unbinds the reference holding the address (any letter case)', async () => {
      await post('/deposits/bind', { depositReference: 'user-1', protocol: 'evm' });
      await post('/deposits/bind', { depositReference: 'user-2', protocol: 'evm' });
      const res = await post('/deposits/unbind', { address: pool[1].toLowerCase(), protocol: 'evm' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const data = style === 'a' ? res.body.data : res.body;
      expect(data).to.include({ depositReference: 'user-2', unboundAddresses: 1 });
      expect((await poolRow(pool[1])).status).to.equal('cooldown');
      expect((await poolRow(pool[0])).status).to.equal('bound');
      expectError(style, await post('/deposits/unbind', { address: pool[1], protocol: 'evm' }), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      expectError(style, await post('/deposits/unbind', { address: randomEvmAddress(), protocol: 'evm' }), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      expectError(style, await post('/deposits/unbind', { address: pool[0] }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await post('/deposits/unbind', {}), 400, 'VALIDATION_ERROR', 'ValidationError');
      expect((await poolRow(pool[0])).status).to.equal('bound');
    });

    it('POST /deposits/unbind {address, protocol: tron}: the address in its exact case only (base58 is case-sensitive)', async () => {
      const [tron] = await seedPoolAddresses(org.organizationId, 'tron', 1);
      const bound = await post('/deposits/bind', { depositReference: 'tron-user', protocol: 'tron' });
      expect(bound.status, JSON.stringify(bound.body)).to.equal(201);
      expect(dataOf(style, bound).address).to.equal(tron);
      const swapped = [...tron].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');
      expectError(style, await post('/deposits/unbind', { address: swapped, protocol: 'tron' }), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      expect((await poolRow(tron)).status).to.equal('bound');
      const res = await post('/deposits/unbind', { address: tron, protocol: 'tron' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(style === 'a' ? res.body.data : res.body).to.include({ depositReference: 'tron-user', unboundAddresses: 1 });
    });

    it('POST /deposits/unbind {depositReference, protocol}: only that family; another family not bound is 404', async () => {
      await post('/deposits/bind', { depositReference: 'user-5', protocol: 'evm' });
      expectError(style, await post('/deposits/unbind', { depositReference: 'user-5', protocol: 'tron' }), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      expect((await poolRow(pool[0])).status).to.equal('bound');
      const res = await post('/deposits/unbind', { depositReference: 'user-5', protocol: 'evm' });
      expect(res.status).to.equal(200);
      expect((await poolRow(pool[0])).status).to.equal('cooldown');
    });

    it('DELETE /deposits/references/:ref: unbinds every chain, to cooldown', async () => {
      await post('/deposits/references', { depositReference: 'user-9', currency: 'USDC', chainId: 'ethereum-local' });
      const res = await del('/deposits/references/user-9');
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const expected = { depositReference: 'user-9', unboundAddresses: 1, addresses: [{ protocol: 'evm', address: pool[0] }] };
      if (style === 'a') expect(res.body).to.deep.equal({ success: true, data: expected, message: 'Unbound 1 address(es)' });
      else expect(res.body).to.deep.equal({ success: true, message: 'Unbound 1 address(es)', ...expected });
      expect((await poolRow(pool[0])).status).to.equal('cooldown');
      const [binding] = await bindingRows(org.organizationId);
      expect(binding.unboundAt).to.be.instanceOf(Date);
      const regs = await testDb().select().from(depositBindingChains).where(eq(depositBindingChains.bindingId, binding.id));
      expect(regs).to.have.length(1);
      expect(regs[0].removedAt).to.be.instanceOf(Date);
      expectError(style, await del('/deposits/references/user-9'), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      // The chain is free again for the reference: registering it anew is not a duplicate.
      expect((await post('/deposits/references', { depositReference: 'user-9', currency: 'USDC', chainId: 'ethereum-local' })).status).to.equal(201);
    });

    it('DELETE with chainId of a family-wide binding is 409 CONFLICT and keeps it bound', async () => {
      await post('/deposits/bind', { depositReference: 'user-3', protocol: 'evm' });
      expectError(style, await del('/deposits/references/user-3?chainId=ethereum-local'), 409, 'CONFLICT', 'Conflict');
      expectError(style, await del('/deposits/references/user-3?chainId=nowhere'), 400, 'INVALID_CHAIN', 'ValidationError');
      expect((await poolRow(pool[0])).status).to.equal('bound');
    });

    it("keeps organizations apart: another organization's references are 404 and unlisted", async () => {
      await post('/deposits/bind', { depositReference: 'shared-name', protocol: 'evm' });
      const other = await createTestOrg('Other deposit org');
      const otherPool = await seedPoolAddresses(other.organizationId, 'evm', 1);
      const k = other.keys.member;
      expectError(style, await get('/deposits/references/shared-name', k), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      expectError(style, await post('/deposits/unbind', { depositReference: 'shared-name' }, k), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      expectError(style, await post('/deposits/unbind', { address: pool[0], protocol: 'evm' }, k), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      expectError(style, await del('/deposits/references/shared-name', k), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
      const list = await get('/deposits/references', k);
      const items = style === 'a' ? list.body.data.references : list.body.data;
      expect(items).to.deep.equal([]);
      expect((await poolRow(pool[0])).status).to.equal('bound');
      // The same reference name in the other organization gets that organization's own address.
      const own = await post('/deposits/bind', { depositReference: 'shared-name', protocol: 'evm' }, k);
      expect(own.status).to.equal(201);
      expect(dataOf(style, own).address).to.equal(otherPool[0]);
    });

    it('GET /deposits/references/:ref?protocol= picks the family; a family not bound is 404', async () => {
      await post('/deposits/bind', { depositReference: 'fam', protocol: 'evm' });
      const res = await get('/deposits/references/fam?protocol=evm');
      expect(res.status).to.equal(200);
      if (style === 'a') expect(dataOf(style, res)).to.include({ protocol: 'evm', address: pool[0] });
      else expect(dataOf(style, res).protocols).to.deep.equal(['evm']);
      expectError(style, await get('/deposits/references/fam?protocol=tron'), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
    });

    it('documents the deposit routes with their per-style shapes in the OpenAPI document', async () => {
      const doc = (await request(app).get(`${V1}/openapi.json`)).body;
      for (const [path, method] of [
        ['/api/v1/deposits/bind', 'post'], ['/api/v1/deposits/unbind', 'post'], ['/api/v1/deposits/references', 'get'], ['/api/v1/deposits/references', 'post'],
        ['/api/v1/deposits/references/{depositReference}', 'get'], ['/api/v1/deposits/references/{depositReference}', 'delete'], ['/api/v1/deposits', 'get'],
      ]) expect(doc.paths[path], path).to.have.property(method);
      expect(doc.paths['/api/v1/deposits/bind'].post.description).to.include('not enabled');
      const list = doc.paths['/api/v1/deposits/references'].get.responses['200'].content['application/json'].schema;
      const detail = doc.paths['/api/v1/deposits/references/{depositReference}'].get.responses['200'].content['application/json'].schema;
      if (style === 'a') {
        expect(list.properties.data.properties).to.have.all.keys('references', 'total', 'page', 'limit');
        expect(detail.properties.data.properties.totalAmount.type).to.equal('string');
      } else {
        expect(list.properties.pagination.properties).to.have.property('hasMore');
        expect(list.properties.data.items.properties).to.have.property('addressCount');
        expect(detail.properties.totalAmount.type).to.equal('object');
      }
    });

    it('honours Idempotency-Key on bind', async () => {
      const first = await post('/deposits/bind', { depositReference: 'idem', protocol: 'evm' }).set('Idempotency-Key', 'bind-idem-1');
      const replay = await post('/deposits/bind', { depositReference: 'idem', protocol: 'evm' }).set('Idempotency-Key', 'bind-idem-1');
      expect(first.status).to.equal(201);
      expect(replay.status).to.equal(201);
      expect(replay.headers['idempotent-replayed']).to.equal('true');
      expect(replay.body).to.deep.equal(first.body);
    });
  });
}

describe('deposit references across chains of one family (testnet registry)', () => {
  const { app, deps } = buildTestApp({
    style: 'b',
    env: { NETWORK: 'testnet', SECRET_ENCRYPTION_KEY: 'ab'.repeat(32), PUBLIC_BASE_URL: 'https://pay.example.com' },
  });
  let org: TestOrg;
  let pool: string[];
  const post = (path: string, body: object) => request(app).post(V1 + path).set('X-API-Key', org.keys.member).send(body);

  beforeEach(async () => {
    org = await createTestOrg('Testnet deposit org');
    pool = await seedPoolAddresses(org.organizationId, 'evm', 2);
  });

  it('reuses the family address on another chain and frees it only when no chain remains', async () => {
    const a = await post('/deposits/references', { depositReference: 'multi', currency: 'USDC', chainId: 'ethereum-sepolia' });
    const b = await post('/deposits/references', { depositReference: 'multi', currency: 'USDC', chainId: 'polygon-amoy' });
    expect([a.status, b.status]).to.deep.equal([201, 201]);
    expect(a.body.address).to.equal(pool[0]);
    expect(b.body.address).to.equal(pool[0]);
    // Every enabled EVM chain of the deployment watches the family address.
    expect(a.body.monitoredChains).to.include.members(['ethereum-sepolia', 'polygon-amoy', 'bsc-testnet', 'base-sepolia', 'arbitrum-sepolia', 'optimism-sepolia', 'avalanche-fuji']);
    expect(a.body.monitoredChains).to.deep.equal(deps.registry.enabledChainsOf('evm').map((c) => c.chainId));
    expect((await post('/deposits/references', { depositReference: 'multi', currency: 'USDC', chainId: 'polygon-amoy' })).status).to.equal(409);

    const detail = await request(app).get(`${V1}/deposits/references/multi`).set('X-API-Key', org.keys.member);
    expect(detail.body.addresses).to.deep.equal([
      { currency: 'USDC', chainId: 'ethereum-sepolia', protocol: 'evm', address: pool[0], createdAt: a.body.createdAt },
      { currency: 'USDC', chainId: 'polygon-amoy', protocol: 'evm', address: pool[0], createdAt: b.body.createdAt },
    ]);

    const first = await request(app).delete(`${V1}/deposits/references/multi?chainId=ethereum-sepolia`).set('X-API-Key', org.keys.member);
    expect(first.status).to.equal(200);
    expect(first.body).to.include({ success: true, depositReference: 'multi', unboundAddresses: 0 });
    expect((await testDb().select().from(poolAddresses).where(eq(poolAddresses.address, pool[0])))[0].status).to.equal('bound');
    const again = await request(app).delete(`${V1}/deposits/references/multi?chainId=ethereum-sepolia`).set('X-API-Key', org.keys.member);
    expect(again.status).to.equal(404);
    expect(again.body.code).to.equal('DEPOSIT_REFERENCE_NOT_FOUND');

    const last = await request(app).delete(`${V1}/deposits/references/multi?chainId=polygon-amoy`).set('X-API-Key', org.keys.member);
    expect(last.body).to.include({ success: true, unboundAddresses: 1 });
    expect((await testDb().select().from(poolAddresses).where(eq(poolAddresses.address, pool[0])))[0].status).to.equal('cooldown');
  });
});
