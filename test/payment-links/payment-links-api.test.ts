import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, STYLES, type TestApp, type TestOrg } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf, expectError, listOf } from '../helpers/wire';

/** The seven payment link endpoints in both wire formats (the checkout has its own tests). */
describe('payment links API', () => {
  const tokens = tokenEnv();
  let org: TestOrg;
  let other: TestOrg;

  before(async () => {
    org = await createTestOrg('Links');
    other = await createTestOrg('Other');
    await seedPoolAddresses(org.organizationId, 'evm', 10);
  });

  const base = { title: 'Concert ticket', amount: '25', currencies: [{ currency: 'USDT', chainId: CHAIN }, { currency: 'USDC', chainId: CHAIN }] };
  const create = (t: TestApp, body: Record<string, unknown> = base, key = org.keys.member) => request(t.app).post('/api/v1/payment-links').set('X-API-Key', key).send(body);

  for (const style of STYLES) {
    describe(`style ${style.toUpperCase()}`, () => {
      const t = buildTestApp({ style, env: { ...tokens, PUBLIC_BASE_URL: 'https://pay.example.com' } });

      it('creates a draft with a generated unguessable slug, its checkoutUrl and counters', async () => {
        const res = await create(t, { ...base, description: 'Row A', inventoryTotal: 100, metadata: { event: 'tour' } });
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        const link = dataOf(style, res);
        expect(link.id).to.match(/^pl_[0-9a-z]{26}$/);
        expect(link.slug).to.match(/^[A-Za-z0-9_-]{22}$/);
        expect(link).to.include({ title: 'Concert ticket', description: 'Row A', amount: '25', status: 'draft', inventoryTotal: 100, checkoutUrl: `https://pay.example.com/l/${link.slug}` });
        expect(link.currencies).to.deep.equal(base.currencies);
        expect(link.metadata).to.deep.equal({ event: 'tour' });
        expect(link.counters).to.deep.equal({ ordersCreated: 0, ordersCompleted: 0, openOrders: 0, amountCollected: [], inventory: { total: 100, reserved: 0, sold: 0, left: 100 } });
        expect(Date.parse(link.createdAt)).to.be.a('number');
      });

      it('answers validation errors in the deployment format and stores nothing', async () => {
        const cases: [Record<string, unknown>, number, string, string][] = [
          [{ amount: '1', currencies: base.currencies }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, title: 'x'.repeat(201) }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, currencies: [] }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, currencies: [{ currency: 'EUR', chainId: CHAIN }] }, 400, 'INVALID_CURRENCY', 'ValidationError'],
          [{ ...base, currencies: [{ currency: 'USDT', chainId: 'moon-mainnet' }] }, 400, 'INVALID_CHAIN', 'ValidationError'],
          [{ ...base, currencies: [base.currencies[0], base.currencies[0]] }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, amount: '-1' }, 400, 'INVALID_AMOUNT', 'ValidationError'],
          [{ ...base, amount: '1.1234567' }, 400, 'INVALID_AMOUNT', 'ValidationError'],
          [{ ...base, minAmount: '1' }, 400, 'INVALID_AMOUNT', 'ValidationError'],
          [{ ...base, amount: '0', minAmount: '10', maxAmount: '5' }, 400, 'INVALID_AMOUNT', 'ValidationError'],
          [{ ...base, expiresAt: new Date(Date.now() - 60_000).toISOString() }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, metadata: { paymentLinkId: 'x' } }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, metadata: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i])) }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, successUrl: 'javascript:alert(1)' }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, slug: 'a/b' }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, inventoryTotal: 0 }, 400, 'VALIDATION_ERROR', 'ValidationError'],
          [{ ...base, color: 'red' }, 400, 'VALIDATION_ERROR', 'ValidationError'],
        ];
        const before = listOf(style, await request(t.app).get('/api/v1/payment-links').set('X-API-Key', org.keys.viewer), 'paymentLinks').pagination.total;
        for (const [body, status, code, aName] of cases) expectError(style, await create(t, body), status, code, aName);
        const after = listOf(style, await request(t.app).get('/api/v1/payment-links').set('X-API-Key', org.keys.viewer), 'paymentLinks').pagination.total;
        expect(after).to.equal(before);
      });

      it('takes a caller-chosen slug once (409 DUPLICATE_SLUG) and a payer-chosen amount with bounds', async () => {
        const slug = `tip-jar-${style}-${Date.now()}`;
        const res = await create(t, { ...base, amount: '0', minAmount: '1', maxAmount: '500', slug });
        const link = dataOf(style, res);
        expect(link).to.include({ slug, amount: '0', minAmount: '1', maxAmount: '500' });
        expectError(style, await create(t, { ...base, slug }), 409, 'DUPLICATE_SLUG', 'Conflict');
        expectError(style, await create(t, { ...base, slug }, other.keys.member), 409, 'DUPLICATE_SLUG', 'Conflict');
      });

      it('roles: Member creates and manages, Viewer reads only; no key is 401', async () => {
        expectError(style, await create(t, base, org.keys.viewer), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
        expectError(style, await request(t.app).post('/api/v1/payment-links').send(base), 401, 'INVALID_API_KEY', 'Unauthorized');
        const link = dataOf(style, await create(t));
        for (const [method, path] of [['post', `/payment-links/${link.id}/publish`], ['post', `/payment-links/${link.id}/archive`], ['put', `/payment-links/${link.id}`], ['delete', `/payment-links/${link.id}`]] as const) {
          expectError(style, await request(t.app)[method](`/api/v1${path}`).set('X-API-Key', org.keys.viewer).send({}), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
        }
        expect((await request(t.app).get(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.viewer)).status).to.equal(200);
      });

      it("another organization's links are 404 on every endpoint", async () => {
        const link = dataOf(style, await create(t));
        for (const [method, path] of [['get', ''], ['put', ''], ['delete', ''], ['post', '/publish'], ['post', '/archive']] as const) {
          expectError(style, await request(t.app)[method](`/api/v1/payment-links/${link.id}${path}`).set('X-API-Key', other.keys.owner).send({ title: 'x' }), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
        }
        const list = listOf(style, await request(t.app).get('/api/v1/payment-links').set('X-API-Key', other.keys.viewer), 'paymentLinks');
        expect(list.items.map((l: { id: string }) => l.id)).to.not.include(link.id);
      });

      it('Idempotency-Key: the same key and body replay the link; another body is 409', async () => {
        const key = `idem-${style}-${Date.now()}`;
        const first = await create(t).set('Idempotency-Key', key);
        const again = await create(t).set('Idempotency-Key', key);
        expect(first.status).to.equal(201);
        expect(again.status).to.equal(201);
        expect(dataOf(style, again).id).to.equal(dataOf(style, first).id);
        expectError(style, await create(t, { ...base, title: 'Other' }).set('Idempotency-Key', key), 409, 'IDEMPOTENCY_KEY_REUSED', 'Conflict');
      });

      it('transitions: draft → active → archived; invalid ones are 409 INVALID_STATUS_TRANSITION', async () => {
        const link = dataOf(style, await create(t));
        const act = (what: string) => request(t.app).post(`/api/v1/payment-links/${link.id}/${what}`).set('X-API-Key', org.keys.member);
        const published = dataOf(style, await act('publish'));
        expect(published.status).to.equal('active');
        expect(published.publishedAt).to.be.a('string');
        expectError(style, await act('publish'), 409, 'INVALID_STATUS_TRANSITION', 'Conflict');
        expect(dataOf(style, await act('archive')).status).to.equal('archived');
        expectError(style, await act('archive'), 409, 'INVALID_STATUS_TRANSITION', 'Conflict');
        expectError(style, await act('publish'), 409, 'INVALID_STATUS_TRANSITION', 'Conflict');
        expectError(style, await request(t.app).put(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.member).send({ title: 'New' }), 409, 'INVALID_STATUS_TRANSITION', 'Conflict');
      });

      it('PUT: a draft changes freely; a published link keeps amount, currencies and slug (409 PAYMENT_LINK_FROZEN)', async () => {
        const link = dataOf(style, await create(t));
        const put = (body: Record<string, unknown>) => request(t.app).put(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.member).send(body);
        expect(dataOf(style, await put({ amount: '30', currencies: [base.currencies[1]] }))).to.include({ amount: '30' });
        await request(t.app).post(`/api/v1/payment-links/${link.id}/publish`).set('X-API-Key', org.keys.member);
        expectError(style, await put({ amount: '31' }), 409, 'PAYMENT_LINK_FROZEN', 'Conflict');
        expectError(style, await put({ currencies: base.currencies }), 409, 'PAYMENT_LINK_FROZEN', 'Conflict');
        expectError(style, await put({ slug: `moved-${Date.now()}` }), 409, 'PAYMENT_LINK_FROZEN', 'Conflict');
        const changed = dataOf(style, await put({ amount: '30', title: 'Renamed', inventoryTotal: 5, description: null, successUrl: 'https://shop.example/thanks', expiresAt: new Date(Date.now() + 3600_000).toISOString() }));
        expect(changed).to.include({ title: 'Renamed', inventoryTotal: 5, description: null, successUrl: 'https://shop.example/thanks', amount: '30', status: 'active' });
        expectError(style, await put({ inventoryTotal: -1 }), 400, 'VALIDATION_ERROR', 'ValidationError');
      });

      it('DELETE: a link without orders is deleted; GET then 404', async () => {
        const link = dataOf(style, await create(t));
        const res = await request(t.app).delete(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.member);
        expect(dataOf(style, res)).to.deep.equal({ id: link.id, deleted: true });
        expectError(style, await request(t.app).get(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.member), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      });

      it('lists with page, limit, status, search, sortBy and sortOrder', async () => {
        const tag = `list-${style}-${Date.now()}`;
        const ids: string[] = [];
        for (const title of ['b', 'a', 'c']) ids.push(dataOf(style, await create(t, { ...base, title: `${tag} ${title}` })).id);
        await request(t.app).post(`/api/v1/payment-links/${ids[0]}/publish`).set('X-API-Key', org.keys.member);
        const all = listOf(style, await request(t.app).get(`/api/v1/payment-links?search=${tag}&sortBy=title&sortOrder=asc`).set('X-API-Key', org.keys.viewer), 'paymentLinks');
        expect(all.items.map((l: { title: string }) => l.title)).to.deep.equal([`${tag} a`, `${tag} b`, `${tag} c`]);
        const active = listOf(style, await request(t.app).get(`/api/v1/payment-links?search=${tag}&status=active`).set('X-API-Key', org.keys.viewer), 'paymentLinks');
        expect(active.items.map((l: { id: string }) => l.id)).to.deep.equal([ids[0]]);
        const paged = listOf(style, await request(t.app).get(`/api/v1/payment-links?search=${tag}&limit=2&page=2`).set('X-API-Key', org.keys.viewer), 'paymentLinks');
        expect(paged.items).to.have.length(1);
        expect(paged.pagination).to.include({ page: 2, limit: 2, total: 3 });
        expectError(style, await request(t.app).get('/api/v1/payment-links?sortBy=amount').set('X-API-Key', org.keys.viewer), 400, 'VALIDATION_ERROR', 'ValidationError');
      });

      it('shows an expired status past expiresAt (derived)', async () => {
        const link = dataOf(style, await create(t, { ...base, expiresAt: new Date(t.clock.now().getTime() + 60_000).toISOString() }));
        await request(t.app).post(`/api/v1/payment-links/${link.id}/publish`).set('X-API-Key', org.keys.member);
        t.clock.advance(120_000);
        expect(dataOf(style, await request(t.app).get(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.viewer)).status).to.equal('expired');
      });
    });
  }

  it('is in the OpenAPI document with its schemas', async () => {
    const t = buildTestApp({ env: tokens });
    const doc = (await request(t.app).get('/api/v1/openapi.json')).body;
    for (const path of ['/payment-links', '/payment-links/{id}', '/payment-links/{id}/publish', '/payment-links/{id}/archive']) expect(doc.paths, path).to.have.property(`/api/v1${path}`);
    expect(Object.keys(doc.paths['/api/v1/payment-links'])).to.have.members(['get', 'post']);
    expect(Object.keys(doc.paths['/api/v1/payment-links/{id}'])).to.have.members(['get', 'put', 'delete']);
  });
});
