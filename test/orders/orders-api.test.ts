import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import request from 'supertest';
import { recomputeOrder } from '../../core/orders/order-state';
import { setConfigValue } from '../../core/organizations/org-config';
import { releasePoolAddressFor } from '../../core/pool/allocation';
import { orders, transfers } from '../../db/schema';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { dataOf, expectError, listOf } from '../helpers/wire';
import { CHAIN, checkpointAt, orgFootprint, poolAddressOf, preserveCheckpoint, tokenEnv } from '../helpers/orders';

const ORDER_KEYS = [
  'orderId', 'orderReference', 'amount', 'amountReceived', 'amountDue', 'amountExcess', 'paymentState', 'currency', 'chainId', 'protocol',
  'address', 'paymentAddress', 'paymentUrl', 'status', 'metadata', 'successUrl', 'cancelUrl', 'requiredConfirmations', 'expiresAt', 'graceEndsAt', 'createdAt',
  // Issue 40: what happened off the happy path, on every order.
  'exceptions', 'resolution', 'resolvedBy', 'resolvedAt', 'resolutionReason', 'lateWindowEndsAt', 'unattributedPayments',
  // Issue 42: what its refunds not cancelled or expired add up to.
  'amountRefunded',
  // Issue 41: a USD order's routes (null on a token order).
  'routes', 'route', 'chosenRoutes',
];

let refSeq = 0;
const ref = (prefix = 'ref') => `${prefix}-${Date.now().toString(36)}-${++refSeq}`;
const body = (overrides: Record<string, unknown> = {}) => ({ orderReference: ref(), amount: '10.5', currency: 'USDT', chainId: CHAIN, ...overrides });

for (const style of STYLES) {
  describe(`orders API (style ${style.toUpperCase()})`, () => {
    preserveCheckpoint();
    const t = buildTestApp({ style, env: { ...tokenEnv(), PUBLIC_BASE_URL: 'https://pay.example.com' } });
    const { app } = t;
    let org: TestOrg;
    let pool: string[];
    const post = (key: string, payload: unknown) => request(app).post('/api/v1/orders').set('X-API-Key', key).send(payload as object);
    const get = (key: string, path: string, query: Record<string, unknown> = {}) => request(app).get(`/api/v1${path}`).query(query).set('Authorization', `Bearer ${key}`);

    before(async () => {
      org = await createTestOrg(`Orders ${style}`);
      pool = await seedPoolAddresses(org.organizationId, 'evm', 40);
    });

    it('creates an order: 201 with the union of A and B fields, the first pool address, window and grace from defaults', async () => {
      const payload = body({ metadata: { customer: 'c-1', n: 2 }, successUrl: 'https://shop.example/ok', cancelUrl: 'http://shop.example/cancel' });
      const res = await post(org.keys.member, payload);
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const o = dataOf(style, res);
      expect(o).to.have.all.keys(ORDER_KEYS);
      expect(o.orderId).to.match(/^ord_[0-9a-z]{26}$/);
      expect(o).to.include({
        orderReference: payload.orderReference,
        amount: '10.5',
        amountReceived: '0',
        currency: 'USDT',
        chainId: CHAIN,
        protocol: 'evm',
        address: pool[0],
        status: 'pending',
        successUrl: 'https://shop.example/ok',
        cancelUrl: 'http://shop.example/cancel',
        requiredConfirmations: 3,
      });
      // The page's URL carries 128 random bits, not the order id (issue 18).
      expect(o.paymentUrl).to.match(/^https:\/\/pay\.example\.com\/pay\/[A-Za-z0-9_-]{22}$/);
      expect(o.paymentUrl).to.not.include(o.orderId);
      expect(o.metadata).to.deep.equal({ customer: 'c-1', n: 2 });
      const created = Date.parse(o.createdAt);
      expect(new Date(created).toISOString()).to.equal(o.createdAt);
      expect(Date.parse(o.expiresAt) - created).to.equal(10 * 60_000);
      expect(Date.parse(o.graceEndsAt) - Date.parse(o.expiresAt)).to.equal(5 * 60_000);
      const [row] = await testDb().select().from(orders).where(eq(orders.id, o.orderId));
      expect(row.amount).to.equal(10_500_000n);
      expect(row.organizationId).to.equal(org.organizationId);
      expect((await poolAddressOf(pool[0])).status).to.equal('allocated');
    });

    it('answers the order as stored: GET /orders/:id gives the same object as the 201 (window and confirmations from the settings)', async () => {
      const other = await createTestOrg('stored org');
      await seedPoolAddresses(other.organizationId, 'evm', 2);
      await setConfigValue(testDb(), other.organizationId, 'payment_window_minutes', 17);
      await setConfigValue(testDb(), other.organizationId, 'confirmations.orders', 9);
      const metadata = { z: 2.5, a: 'ü', yes: true, none: null, empty: '', big: 12345678901234567890 };
      const res = await post(other.keys.member, body({ metadata, graceMinutes: 7, successUrl: 'https://shop.example/ok' }));
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const created = dataOf(style, res);
      const stored = dataOf(style, await get(other.keys.viewer, `/orders/${created.orderId}`));
      expect(created).to.deep.equal(stored);
      expect(created.requiredConfirmations).to.equal(9);
      expect(Date.parse(created.graceEndsAt) - Date.parse(created.createdAt)).to.equal(24 * 60_000);
    });

    it('takes paymentWindowMinutes from the organization setting, and explicit window and grace over it; DAI with 18 decimals', async () => {
      const other = await createTestOrg('window org');
      await seedPoolAddresses(other.organizationId, 'evm', 3);
      await setConfigValue(testDb(), other.organizationId, 'payment_window_minutes', 25);
      const a = dataOf(style, await post(other.keys.member, body()));
      expect(Date.parse(a.expiresAt) - Date.parse(a.createdAt)).to.equal(25 * 60_000);
      const b = dataOf(style, await post(other.keys.member, body({ paymentWindowMinutes: 3, graceMinutes: 0, currency: 'DAI', amount: '0.000000000000000001' })));
      expect(Date.parse(b.expiresAt) - Date.parse(b.createdAt)).to.equal(3 * 60_000);
      expect(b.graceEndsAt).to.equal(b.expiresAt);
      expect(b).to.include({ currency: 'DAI', amount: '0.000000000000000001', successUrl: null, cancelUrl: null });
      expect(b.metadata).to.deep.equal({});
    });

    describe('validation: every rule answers its code and stores or allocates nothing', () => {
      let vorg: TestOrg;
      before(async () => {
        vorg = await createTestOrg('validation org');
        await seedPoolAddresses(vorg.organizationId, 'evm', 2);
      });
      const V = ['VALIDATION_ERROR', 'ValidationError'] as const;
      const AMOUNT = ['INVALID_AMOUNT', 'ValidationError'] as const;
      const CHAIN_ERR = ['INVALID_CHAIN', 'ValidationError'] as const;
      const CURRENCY = ['INVALID_CURRENCY', 'ValidationError'] as const;
      const cases: [string, unknown, readonly [string, string]][] = [
        ['missing orderReference', { amount: '1', currency: 'USDT', chainId: CHAIN }, V],
        ['missing amount', { orderReference: 'x', currency: 'USDT', chainId: CHAIN }, V],
        ['missing currency', { orderReference: 'x', amount: '1', chainId: CHAIN }, V],
        ['missing chainId', { orderReference: 'x', amount: '1', currency: 'USDT' }, V],
        ['empty orderReference', body({ orderReference: '' }), V],
        ['orderReference over 255 characters', body({ orderReference: 'r'.repeat(256) }), V],
        ['orderReference with a control character', body({ orderReference: 'a\u0000b' }), V],
        ['orderReference not a string', body({ orderReference: 12 }), V],
        ['unknown field', body({ organizationId: 'org_x' }), V],
        ['body not an object', ['x'], V],
        ['amount zero', body({ amount: '0' }), AMOUNT],
        ['amount 0.000000', body({ amount: '0.000000' }), AMOUNT],
        ['amount negative', body({ amount: '-1' }), AMOUNT],
        ['amount not decimal', body({ amount: 'ten' }), AMOUNT],
        ['amount exponent', body({ amount: '1e3' }), AMOUNT],
        ['amount leading zero', body({ amount: '01.5' }), AMOUNT],
        ['amount trailing dot', body({ amount: '1.' }), AMOUNT],
        ['amount as a JSON number', body({ amount: 10 }), AMOUNT],
        ['amount with more decimals than the token (USDT 6)', body({ amount: '1.1234567' }), AMOUNT],
        ['amount above the cap', body({ amount: '1000000000000' }), AMOUNT],
        ['unknown chain', body({ chainId: 'bitcoin-mainnet' }), CHAIN_ERR],
        ['chain of another network', body({ chainId: 'ethereum-sepolia' }), CHAIN_ERR],
        ['unknown currency', body({ currency: 'EUR' }), CURRENCY],
        ['currency in lower case', body({ currency: 'usdt' }), CURRENCY],
        ['successUrl not http(s)', body({ successUrl: 'ftp://shop.example/ok' }), V],
        ['successUrl relative', body({ successUrl: '/ok' }), V],
        ['cancelUrl javascript:', body({ cancelUrl: 'javascript:alert(1)' }), V],
        ['successUrl not a string', body({ successUrl: 5 }), V],
        ['metadata with 11 pairs', body({ metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])) }), V],
        ['metadata with a nested object', body({ metadata: { a: { b: 1 } } }), V],
        ['metadata as an array', body({ metadata: ['a'] }), V],
        ['metadata value too long', body({ metadata: { a: 'x'.repeat(501) } }), V],
        ['metadata value with a NUL character', body({ metadata: { a: 'x\u0000y' } }), V],
        ['metadata key with a NUL character', body({ metadata: { 'a\u0000': 'x' } }), V],
        ['metadata value with an unpaired surrogate', body({ metadata: { a: 'x\ud800' } }), V],
        ['successUrl with a NUL character', body({ successUrl: 'https://shop.example/\u0000' }), V],
        ['paymentWindowMinutes 0', body({ paymentWindowMinutes: 0 }), V],
        ['paymentWindowMinutes above a week', body({ paymentWindowMinutes: 10_081 }), V],
        ['paymentWindowMinutes fractional', body({ paymentWindowMinutes: 1.5 }), V],
        ['paymentWindowMinutes as a string', body({ paymentWindowMinutes: '10' }), V],
        ['graceMinutes negative', body({ graceMinutes: -1 }), V],
        ['graceMinutes above a day', body({ graceMinutes: 1441 }), V],
      ];
      it('a metadata number beyond the double range (1e400, sent as raw JSON): 400 VALIDATION_ERROR, not stored as null', async () => {
        for (const number of ['1e400', '-1e400']) {
          const raw = JSON.stringify(body()).replace(/}$/, `,"metadata":{"n":${number}}}`);
          const res = await request(app).post('/api/v1/orders').set('X-API-Key', vorg.keys.member).set('Content-Type', 'application/json').send(raw);
          expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
          expect(JSON.stringify(res.body)).to.include('metadata.n');
        }
        expect(await orgFootprint(vorg.organizationId)).to.deep.equal({ orderCount: 0, assignmentCount: 0, eventCount: 0, poolSize: 2, notAvailable: 0 });
      });

      for (const [name, payload, [code, aName]] of cases) {
        it(`${name}: 400 ${code}`, async () => {
          const res = await post(vorg.keys.member, payload);
          expectError(style, res, 400, code, aName);
          expect(await orgFootprint(vorg.organizationId)).to.deep.equal({ orderCount: 0, assignmentCount: 0, eventCount: 0, poolSize: 2, notAvailable: 0 });
        });
      }

      it('currency not configured on the chain: 400 INVALID_CURRENCY', async () => {
        const onlyUsdt = buildTestApp({ style, env: { TOKEN_ETHEREUM_LOCAL_USDT: tokenEnv().TOKEN_ETHEREUM_LOCAL_USDT } });
        const res = await request(onlyUsdt.app).post('/api/v1/orders').set('X-API-Key', vorg.keys.member).send(body({ currency: 'DAI' }));
        expectError(style, res, 400, 'INVALID_CURRENCY', 'ValidationError');
        expect(res.body.message).to.include('Available: USDT');
        expect(await orgFootprint(vorg.organizationId)).to.deep.include({ orderCount: 0, assignmentCount: 0, notAvailable: 0 });
      });

      it('a Viewer key cannot create (403) but a missing key is 401; nothing stored', async () => {
        expectError(style, await post(vorg.keys.viewer, body()), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
        expectError(style, await request(app).post('/api/v1/orders').send(body()), 401, 'INVALID_API_KEY', 'Unauthorized');
        expect(await orgFootprint(vorg.organizationId)).to.deep.include({ orderCount: 0, assignmentCount: 0, notAvailable: 0 });
      });
    });

    it('pool exhausted: 503 NO_AVAILABLE_ADDRESSES / InsufficientAddresses and nothing stored', async () => {
      const small = await createTestOrg('small pool');
      await seedPoolAddresses(small.organizationId, 'evm', 1);
      await seedPoolAddresses(small.organizationId, 'tron', 3);
      const firstBody = body();
      const first = await post(small.keys.member, firstBody);
      expect(first.status).to.equal(201);
      const res = await post(small.keys.member, body());
      expectError(style, res, 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
      expect(res.body.message).to.include('evm');
      // A duplicate reference is still a 409 when the pool is empty too.
      const dup = await post(small.keys.member, firstBody);
      expectError(style, dup, 409, 'DUPLICATE_ORDER_REFERENCE', 'Conflict');
      expect(dup.body.existingOrderId).to.equal(dataOf(style, first).orderId);
      expect(await orgFootprint(small.organizationId)).to.deep.equal({ orderCount: 1, assignmentCount: 1, eventCount: 0, poolSize: 4, notAvailable: 1 });
      const empty = await createTestOrg('no pool');
      expectError(style, await post(empty.keys.member, body()), 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
      expect(await orgFootprint(empty.organizationId)).to.deep.include({ orderCount: 0, assignmentCount: 0 });
    });

    it('takes an address whose cooldown has ended before the cooldown job has returned it', async () => {
      const own = buildTestApp({ style, env: { ...tokenEnv(), PUBLIC_BASE_URL: 'https://pay.example.com' } });
      const corg = await createTestOrg('cooled pool');
      const [only] = await seedPoolAddresses(corg.organizationId, 'evm', 1);
      const create = () => request(own.app).post('/api/v1/orders').set('X-API-Key', corg.keys.member).send(body());
      const first = await create();
      expect(first.status, JSON.stringify(first.body)).to.equal(201);
      expect(dataOf(style, first).address).to.equal(only);
      // The order ends; its address cools down for the default 30 minutes.
      const held = await poolAddressOf(only);
      const released = own.clock.now();
      await testDb().transaction((tx) =>
        releasePoolAddressFor(tx, { poolAddressId: held.id, organizationId: corg.organizationId, reason: 'order', now: released, minimumCooldownSeconds: 0 }),
      );
      expectError(style, await create(), 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
      own.clock.advance(31 * 60_000);
      const second = await create();
      expect(second.status, JSON.stringify(second.body)).to.equal(201);
      expect(dataOf(style, second).address).to.equal(only);
      const row = await poolAddressOf(only);
      expect(row.status).to.equal('allocated');
      expect(row.recycledAt!.getTime()).to.equal(released.getTime() + 30 * 60_000);
      expect(await orgFootprint(corg.organizationId)).to.deep.include({ orderCount: 2, assignmentCount: 2 });
    });

    it('duplicate orderReference: 409 DUPLICATE_ORDER_REFERENCE with existingOrderId, nothing allocated', async () => {
      const dorg = await createTestOrg('dup org');
      await seedPoolAddresses(dorg.organizationId, 'evm', 5);
      const first = dataOf(style, await post(dorg.keys.member, body({ orderReference: 'dup-1' })));
      const res = await post(dorg.keys.member, body({ orderReference: 'dup-1', amount: '99' }));
      expectError(style, res, 409, 'DUPLICATE_ORDER_REFERENCE', 'Conflict');
      expect(res.body.existingOrderId).to.equal(first.orderId);
      expect(await orgFootprint(dorg.organizationId)).to.deep.include({ orderCount: 1, assignmentCount: 1, notAvailable: 1 });
      // The same reference in another organization is fine.
      expect((await post(org.keys.member, body({ orderReference: 'dup-1' }))).status).to.equal(201);
    });

    it('concurrent creations with one reference: one 201, the rest 409 naming it; one address taken', async () => {
      const corg = await createTestOrg('race org');
      await seedPoolAddresses(corg.organizationId, 'evm', 10);
      const results = await Promise.all(Array.from({ length: 8 }, () => post(corg.keys.member, body({ orderReference: 'race-1' }))));
      const created = results.filter((r) => r.status === 201);
      expect(created, results.map((r) => r.status).join(',')).to.have.length(1);
      const id = dataOf(style, created[0]).orderId;
      for (const r of results.filter((x) => x.status !== 201)) {
        expectError(style, r, 409, 'DUPLICATE_ORDER_REFERENCE', 'Conflict');
        expect(r.body.existingOrderId).to.equal(id);
      }
      expect(await orgFootprint(corg.organizationId)).to.deep.include({ orderCount: 1, assignmentCount: 1, notAvailable: 1 });
    });

    it('after concurrent creations that failed (one reference), the next order takes the first address they gave back', async () => {
      const corg = await createTestOrg('given back org');
      const addrs = await seedPoolAddresses(corg.organizationId, 'evm', 10);
      const results = await Promise.all(Array.from({ length: 8 }, () => post(corg.keys.member, body({ orderReference: 'given-back' }))));
      const winner = dataOf(style, results.find((r) => r.status === 201)!).address;
      // Whichever address the winner took, the failed creations gave theirs back: allocation
      // order resumes at the first of them, not after the winner's.
      const next = dataOf(style, await post(corg.keys.member, body())).address;
      expect(next).to.equal(addrs.find((a) => a !== winner));
    });

    it('an address returned behind the point creations have reached (an older import) is still allocated, never a 503', async () => {
      const horg = await createTestOrg('behind org');
      const [a0, a1, a2] = await seedPoolAddresses(horg.organizationId, 'evm', 3);
      expect(dataOf(style, await post(horg.keys.member, body())).address).to.equal(a0);
      expect(dataOf(style, await post(horg.keys.member, body())).address).to.equal(a1);
      const [older] = await seedPoolAddresses(horg.organizationId, 'evm', 1, new Date(Date.now() - 3_600_000));
      const third = dataOf(style, await post(horg.keys.member, body())).address;
      const fourth = dataOf(style, await post(horg.keys.member, body())).address;
      expect([third, fourth]).to.have.members([a2, older]);
      expectError(style, await post(horg.keys.member, body()), 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
    });

    it('concurrent creations with different references take different addresses', async () => {
      const porg = await createTestOrg('parallel org');
      const addrs = await seedPoolAddresses(porg.organizationId, 'evm', 12);
      const results = await Promise.all(Array.from({ length: 10 }, () => post(porg.keys.member, body())));
      expect(results.map((r) => r.status)).to.deep.equal(Array(10).fill(201));
      const taken = results.map((r) => dataOf(style, r).address);
      expect(new Set(taken).size).to.equal(10);
      expect(addrs.slice(0, 10)).to.have.members(taken);
    });

    describe('reading', () => {
      let created: any;
      let other: TestOrg;
      before(async () => {
        created = dataOf(style, await post(org.keys.member, body({ orderReference: 'read-me/1 ü', metadata: { a: 'b' } })));
        other = await createTestOrg('other org');
        await seedPoolAddresses(other.organizationId, 'evm', 2);
      });

      it('GET /orders/:orderId and /orders/by-reference/:ref return the same body, to every role', async () => {
        for (const role of ['viewer', 'member', 'admin', 'owner'] as const) {
          const byId = await get(org.keys[role], `/orders/${created.orderId}`);
          expect(byId.status).to.equal(200);
          expect(dataOf(style, byId)).to.deep.equal(created);
        }
        const byRef = await get(org.keys.viewer, `/orders/by-reference/${encodeURIComponent('read-me/1 ü')}`);
        expect(byRef.status, JSON.stringify(byRef.body)).to.equal(200);
        expect(dataOf(style, byRef)).to.deep.equal(created);
      });

      it('unknown ids and references are 404', async () => {
        expectError(style, await get(org.keys.viewer, '/orders/ord_nope'), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
        expectError(style, await get(org.keys.viewer, '/orders/by-reference/nope'), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      });

      it("another organization cannot see, list or find by reference this organization's orders", async () => {
        expectError(style, await get(other.keys.owner, `/orders/${created.orderId}`), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
        expectError(style, await get(other.keys.owner, `/orders/by-reference/${encodeURIComponent(created.orderReference)}`), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
        const list = listOf(style, await get(other.keys.owner, '/orders'), 'orders');
        expect(list.items).to.deep.equal([]);
        expect(list.pagination.total).to.equal(0);
        const search = listOf(style, await get(other.keys.owner, '/orders', { orderReference: 'read-me' }), 'orders');
        expect(search.items).to.deep.equal([]);
      });

      it('a completed order shows txHash, blockNumber, confirmations and completedAt', async () => {
        const o = dataOf(style, await post(org.keys.member, body({ amount: '2' })));
        const trf = await insertTestTransfer({
          chainId: CHAIN, currency: 'USDT', amount: 2_500_000n, toAddress: o.address, orderId: o.orderId, organizationId: org.organizationId,
          counted: true, status: 'confirmed', confirmations: 4, blockNumber: 321, blockTimestamp: new Date(Date.parse(o.createdAt) + 5000),
        });
        await t.deps.db.transaction((tx) => recomputeOrder(tx, t.deps, o.orderId));
        const got = dataOf(style, await get(org.keys.viewer, `/orders/${o.orderId}`));
        expect(got).to.have.all.keys([...ORDER_KEYS, 'txHash', 'blockNumber', 'confirmations', 'completedAt']);
        expect(got).to.include({ status: 'completed', txHash: trf.txHash, blockNumber: 321, confirmations: 4, amountReceived: '2.5' });
        const [credited] = await testDb().select().from(transfers).where(eq(transfers.id, trf.id));
        expect(credited.credited).to.equal(true);
      });

      it('an expired order shows expiredAt and no completion fields', async () => {
        const o = dataOf(style, await post(org.keys.member, body({ paymentWindowMinutes: 1, graceMinutes: 0 })));
        await checkpointAt(new Date(Date.parse(o.graceEndsAt) + 1000));
        t.clock.advance(61_000);
        try {
          await t.deps.db.transaction((tx) => recomputeOrder(tx, t.deps, o.orderId));
        } finally {
          t.clock.advance(-61_000);
        }
        const got = dataOf(style, await get(org.keys.viewer, `/orders/${o.orderId}`));
        expect(got).to.have.all.keys([...ORDER_KEYS, 'expiredAt']);
        expect(got.status).to.equal('expired');
      });
    });

    describe('listing', () => {
      let lorg: TestOrg;
      const made: any[] = [];
      before(async () => {
        lorg = await createTestOrg('list org');
        await seedPoolAddresses(lorg.organizationId, 'evm', 10);
        const specs = [
          { orderReference: 'inv_100%', amount: '2', currency: 'USDT' },
          { orderReference: 'inv-200', amount: '1.5', currency: 'DAI', paymentWindowMinutes: 60 },
          { orderReference: 'INVX300', amount: '300', currency: 'USDC', paymentWindowMinutes: 5 },
          { orderReference: 'other-1', amount: '2', currency: 'USDT', paymentWindowMinutes: 30 },
          { orderReference: 'back\\slash', amount: '0.5', currency: 'USDT' },
        ];
        for (const s of specs) {
          made.push(dataOf(style, await post(lorg.keys.member, { chainId: CHAIN, ...s })));
          t.clock.advance(1000);
        }
        t.clock.advance(-5000);
      });
      const ids = (items: any[]) => items.map((o) => o.orderReference);

      it('lists newest first by default with the style\'s pagination', async () => {
        const { items, pagination } = listOf(style, await get(lorg.keys.viewer, '/orders'), 'orders');
        expect(ids(items)).to.deep.equal(['back\\slash', 'other-1', 'INVX300', 'inv-200', 'inv_100%']);
        expect(pagination).to.include({ page: 1, limit: 20, total: 5, totalPages: 1 });
        if (style === 'b') expect(pagination.hasMore).to.equal(false);
        expect(items[0]).to.deep.equal(made[4]);
      });

      it('pages with limit and page', async () => {
        const p2 = listOf(style, await get(lorg.keys.viewer, '/orders', { limit: 2, page: 2, sortOrder: 'asc' }), 'orders');
        expect(ids(p2.items)).to.deep.equal(['INVX300', 'other-1']);
        expect(p2.pagination).to.include({ page: 2, limit: 2, total: 5, totalPages: 3 });
        if (style === 'b') expect(p2.pagination.hasMore).to.equal(true);
      });

      it('filters by status, currency, chainId', async () => {
        expect(ids(listOf(style, await get(lorg.keys.viewer, '/orders', { currency: 'USDT', sortOrder: 'asc' }), 'orders').items)).to.deep.equal(['inv_100%', 'other-1', 'back\\slash']);
        expect(listOf(style, await get(lorg.keys.viewer, '/orders', { status: 'completed' }), 'orders').items).to.deep.equal([]);
        expect(listOf(style, await get(lorg.keys.viewer, '/orders', { status: 'pending' }), 'orders').pagination.total).to.equal(5);
        expect(listOf(style, await get(lorg.keys.viewer, '/orders', { chainId: 'ethereum-sepolia' }), 'orders').items).to.deep.equal([]);
      });

      it('searches orderReference case-insensitively with %, _ and \\ taken literally', async () => {
        const search = async (q: string) => ids(listOf(style, await get(lorg.keys.viewer, '/orders', { orderReference: q, sortOrder: 'asc' }), 'orders').items);
        expect(await search('inv')).to.deep.equal(['inv_100%', 'inv-200', 'INVX300']);
        expect(await search('%')).to.deep.equal(['inv_100%']);
        expect(await search('inv_')).to.deep.equal(['inv_100%']);
        expect(await search('\\')).to.deep.equal(['back\\slash']);
      });

      it('sorts by amount in token units across decimals, and by expiresAt; ties by id', async () => {
        const byAmount = ids(listOf(style, await get(lorg.keys.viewer, '/orders', { sortBy: 'amount', sortOrder: 'asc' }), 'orders').items);
        expect(byAmount).to.deep.equal(['back\\slash', 'inv-200', 'inv_100%', 'other-1', 'INVX300']);
        const byAmountDesc = ids(listOf(style, await get(lorg.keys.viewer, '/orders', { sortBy: 'amount' }), 'orders').items);
        expect(byAmountDesc).to.deep.equal(['INVX300', 'other-1', 'inv_100%', 'inv-200', 'back\\slash']);
        const byExpiry = ids(listOf(style, await get(lorg.keys.viewer, '/orders', { sortBy: 'expiresAt', sortOrder: 'asc' }), 'orders').items);
        expect(byExpiry).to.deep.equal(['INVX300', 'inv_100%', 'back\\slash', 'other-1', 'inv-200']);
      });

      it('rejects an unknown sortBy, a bad status, and limit over 100', async () => {
        expectError(style, await get(lorg.keys.viewer, '/orders', { sortBy: 'address' }), 400, 'VALIDATION_ERROR', 'ValidationError');
        expectError(style, await get(lorg.keys.viewer, '/orders', { status: 'paid' }), 400, 'VALIDATION_ERROR', 'ValidationError');
        expectError(style, await get(lorg.keys.viewer, '/orders', { limit: 101 }), 400, 'VALIDATION_ERROR', 'ValidationError');
      });
    });

    describe('Idempotency-Key', () => {
      let iorg: TestOrg;
      before(async () => {
        iorg = await createTestOrg('idem org');
        await seedPoolAddresses(iorg.organizationId, 'evm', 10);
      });
      const postKeyed = (key: string, payload: unknown) =>
        request(app).post('/api/v1/orders').set('X-API-Key', iorg.keys.member).set('Idempotency-Key', key).send(payload as object);

      it('replays the same order for the same key and body; another body is 409', async () => {
        const payload = body();
        const first = await postKeyed('idem-1', payload);
        expect(first.status).to.equal(201);
        const again = await postKeyed('idem-1', payload);
        expect(again.status).to.equal(201);
        expect(again.headers['idempotent-replayed']).to.equal('true');
        expect(again.body).to.deep.equal(first.body);
        expectError(style, await postKeyed('idem-1', { ...payload, amount: '11' }), 409, 'IDEMPOTENCY_KEY_REUSED', 'Conflict');
        expect(await orgFootprint(iorg.organizationId)).to.deep.include({ orderCount: 1, assignmentCount: 1 });
      });

      it('20 concurrent identical requests create one order', async () => {
        const payload = body();
        const results = await Promise.all(Array.from({ length: 20 }, () => postKeyed('idem-burst', payload)));
        const ok = results.filter((r) => r.status === 201);
        expect(ok.length).to.be.greaterThan(0);
        for (const r of results.filter((x) => x.status !== 201)) expectError(style, r, 409, 'IDEMPOTENCY_IN_PROGRESS', 'Conflict');
        expect(new Set(ok.map((r) => dataOf(style, r).orderId)).size).to.equal(1);
        const rows = await testDb().select().from(orders).where(eq(orders.orderReference, payload.orderReference));
        expect(rows).to.have.length(1);
        const replay = await postKeyed('idem-burst', payload);
        expect(replay.status).to.equal(201);
        expect(dataOf(style, replay).orderId).to.equal(rows[0].id);
      });
    });

    it('documents the order routes in the OpenAPI document', async () => {
      const doc = (await request(app).get('/api/v1/openapi.json')).body;
      expect(doc.paths['/api/v1/orders']).to.have.keys('get', 'post');
      expect(doc.paths['/api/v1/orders/{orderId}']).to.have.key('get');
      expect(doc.paths['/api/v1/orders/by-reference/{orderReference}']).to.have.key('get');
      expect(JSON.stringify(doc.paths['/api/v1/orders'].post)).to.include('non-dropped');
    });
  });
}
