import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, STYLES, type TestOrg } from '../helpers/harness';
import { listOf } from '../helpers/wire';
import { insertTestTransfer } from '../helpers/transfers';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';

/** sortBy and sortOrder on every list the spec's rule covers (issue 30, item 12). */
for (const style of STYLES) {
  describe(`sortBy on API keys, webhook endpoints and events, transfers, deposit references (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style, env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
    let org: TestOrg;
    const get = (path: string, query: Record<string, string>) => request(app).get(`/api/v1${path}`).query(query).set('X-API-Key', org.keys.owner);

    before(async () => {
      org = await createTestOrg(`Sorting ${style}`);
      for (const url of ['https://b.example/hook', 'https://a.example/hook', 'https://c.example/hook']) {
        await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url, events: ['order.completed'] }).expect(201);
      }
      // 2 USDT (6 decimals), 1.5 DAI (18), 3 USDC (6): face-value order DAI < USDT < USDC.
      for (const [currency, amount] of [['USDT', 2_000_000n], ['DAI', 1_500_000_000_000_000_000n], ['USDC', 3_000_000n]] as const) {
        await insertTestTransfer({ chainId: 'ethereum-local', currency, amount, toAddress: randomEvmAddress(), organizationId: org.organizationId });
      }
    });

    it('API keys: oldest first by default; sortBy name, role', async () => {
      const names = async (q: Record<string, string>) => listOf(style, await get(`/organizations/${org.organizationId}/api-keys`, q), 'apiKeys').items.map((k) => k.name);
      const byDefault = await names({});
      expect(byDefault[0]).to.not.equal(undefined);
      expect(await names({ sortBy: 'name' })).to.deep.equal([...byDefault].sort());
      expect(await names({ sortBy: 'name', sortOrder: 'desc' })).to.deep.equal([...byDefault].sort().reverse());
      expect((await get(`/organizations/${org.organizationId}/api-keys`, { sortBy: 'secret' })).status).to.equal(400);
    });

    it('webhook endpoints: oldest first by default; sortBy url', async () => {
      const urls = async (q: Record<string, string>) => listOf(style, await get('/webhooks/endpoints', q), 'endpoints').items.map((e) => e.url);
      expect(await urls({})).to.deep.equal(['https://b.example/hook', 'https://a.example/hook', 'https://c.example/hook']);
      expect(await urls({ sortBy: 'url' })).to.deep.equal(['https://a.example/hook', 'https://b.example/hook', 'https://c.example/hook']);
      expect(await urls({ sortBy: 'createdAt', sortOrder: 'desc' })).to.deep.equal(['https://c.example/hook', 'https://a.example/hook', 'https://b.example/hook']);
    });

    it('webhook events: newest first by default; sortBy type', async () => {
      const res = await get('/webhooks/events', { sortBy: 'type', sortOrder: 'asc' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const types = listOf(style, res, 'events').items.map((e) => e.type);
      expect(types).to.deep.equal([...types].sort());
    });

    it('transfers: sortBy amount at face value across decimals, and createdAt', async () => {
      const currencies = async (q: Record<string, string>) => listOf(style, await get('/transfers', q), 'transfers').items.map((t) => t.currency);
      expect(await currencies({ sortBy: 'amount', sortOrder: 'asc' })).to.deep.equal(['DAI', 'USDT', 'USDC']);
      expect(await currencies({ sortBy: 'amount' })).to.deep.equal(['USDC', 'USDT', 'DAI']);
      expect(await currencies({ sortBy: 'createdAt', sortOrder: 'asc' })).to.deep.equal(['USDT', 'DAI', 'USDC']);
    });

    it('deposit references: newest binding first by default; sortBy depositReference', async () => {
      await seedPoolAddresses(org.organizationId, 'evm', 3);
      for (const depositReference of ['user-b', 'user-c', 'user-a']) {
        await request(app).post('/api/v1/deposits/bind').set('X-API-Key', org.keys.member).send({ depositReference, protocol: 'evm' }).expect(201);
      }
      const refs = async (q: Record<string, string>) => {
        const res = await get('/deposits/references', q);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        const items: { depositReference: string }[] = style === 'a' ? res.body.data.references : res.body.data;
        return items.map((r) => r.depositReference);
      };
      expect(await refs({})).to.deep.equal(['user-a', 'user-c', 'user-b']);
      expect(await refs({ sortBy: 'createdAt', sortOrder: 'asc' })).to.deep.equal(['user-b', 'user-c', 'user-a']);
      expect(await refs({ sortBy: 'depositReference', sortOrder: 'asc' })).to.deep.equal(['user-a', 'user-b', 'user-c']);
      expect(await refs({ sortBy: 'depositReference' })).to.deep.equal(['user-c', 'user-b', 'user-a']);
      expect((await get('/deposits/references', { sortBy: 'amount' })).status).to.equal(400);
    });
  });
}
