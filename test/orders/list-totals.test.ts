import { expect } from 'chai';
import { eq, sql } from 'drizzle-orm';
import request from 'supertest';
import { recomputeOrder } from '../../core/orders/order-state';
import { foldListCounts } from '../../core/maintenance/list-counts';
import { transfers } from '../../db/schema';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { dataOf, listOf } from '../helpers/wire';
import { CHAIN, checkpointAt, preserveCheckpoint, tokenEnv } from '../helpers/orders';

/**
 * The exact totals of GET /orders and GET /transfers come from counts kept by the writes
 * (db/migrations/0016_list_counts.sql) instead of counting the rows on each request: they must
 * follow every write that changes what a list holds (creations from many connections at once, a
 * failed creation, status changes, deletions), and the pages they describe are still the offset
 * pages of the contract.
 */
for (const style of STYLES) {
  describe(`list totals kept by the writes (style ${style.toUpperCase()})`, () => {
    preserveCheckpoint();
    const t = buildTestApp({ style, env: tokenEnv() });
    let org: TestOrg;
    let other: TestOrg;
    const get = (key: string, path: string, query: Record<string, unknown> = {}) => request(t.app).get(`/api/v1${path}`).query(query).set('X-API-Key', key);
    const post = (key: string, payload: object) => request(t.app).post('/api/v1/orders').set('X-API-Key', key).send(payload);
    const totalOf = async (key: string, path: string, query: Record<string, unknown> = {}) => {
      const res = await get(key, path, query);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return listOf(style, res, path.slice(1)).pagination.total as number;
    };
    const orderTotals = async (key: string) => ({
      all: await totalOf(key, '/orders'),
      pending: await totalOf(key, '/orders', { status: 'pending' }),
      completed: await totalOf(key, '/orders', { status: 'completed' }),
      expired: await totalOf(key, '/orders', { status: 'expired' }),
    });
    let made: any[] = [];

    before(async () => {
      org = await createTestOrg(`totals ${style}`);
      other = await createTestOrg(`totals other ${style}`);
      await seedPoolAddresses(org.organizationId, 'evm', 13);
      await seedPoolAddresses(other.organizationId, 'evm', 2);
      // At once: the creations run on several of the pool's connections (counter rows of their own).
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => post(org.keys.member, { orderReference: `tot-${style}-${i}`, amount: '1', currency: 'USDT', chainId: CHAIN })));
      expect(answers.map((r) => r.status)).to.deep.equal(Array(12).fill(201));
      made = answers.map((r) => dataOf(style, r));
      expect((await post(other.keys.member, { orderReference: 'elsewhere', amount: '1', currency: 'USDT', chainId: CHAIN })).status).to.equal(201);
    });

    it('counts creations exactly, per organization; a refused creation counts nothing', async () => {
      expect(await orderTotals(org.keys.viewer)).to.deep.equal({ all: 12, pending: 12, completed: 0, expired: 0 });
      expect((await post(org.keys.member, { orderReference: `tot-${style}-0`, amount: '1', currency: 'USDT', chainId: CHAIN })).status).to.equal(409);
      expect((await post(org.keys.member, { orderReference: `tot-${style}-x`, amount: 'abc', currency: 'USDT', chainId: CHAIN })).status).to.equal(400);
      expect(await orderTotals(org.keys.viewer)).to.deep.equal({ all: 12, pending: 12, completed: 0, expired: 0 });
      expect(await orderTotals(other.keys.viewer)).to.deep.equal({ all: 1, pending: 1, completed: 0, expired: 0 });
      const pages = listOf(style, await get(org.keys.viewer, '/orders', { limit: 5 }), 'orders').pagination;
      expect(pages).to.include({ total: 12, totalPages: 3 });
    });

    it('follows status changes: completed and expired orders move between the status totals', async () => {
      const [paid, ...rest] = made;
      await insertTestTransfer({
        chainId: CHAIN, currency: 'USDT', amount: 1_000_000n, toAddress: paid.address, orderId: paid.orderId, organizationId: org.organizationId,
        counted: true, status: 'confirmed', confirmations: 4, blockNumber: 10, blockTimestamp: new Date(Date.parse(paid.createdAt) + 1000),
      });
      await t.deps.db.transaction((tx) => recomputeOrder(tx, t.deps, paid.orderId));
      await checkpointAt(new Date(Date.parse(rest[0].graceEndsAt) + 60_000));
      t.clock.advance(20 * 60_000);
      try {
        for (const o of rest.slice(0, 3)) await t.deps.db.transaction((tx) => recomputeOrder(tx, t.deps, o.orderId));
      } finally {
        t.clock.advance(-20 * 60_000);
      }
      expect(await orderTotals(org.keys.viewer)).to.deep.equal({ all: 12, pending: 8, completed: 1, expired: 3 });
      const expired = listOf(style, await get(org.keys.viewer, '/orders', { status: 'expired', limit: 2, page: 2 }), 'orders');
      expect(expired.pagination).to.include({ total: 3, totalPages: 2 });
      expect(expired.items).to.have.length(1);
    });

    it('pages are the offset pages of the whole list, in order (newest first, ties by id)', async () => {
      const all = listOf(style, await get(org.keys.viewer, '/orders', { limit: 100 }), 'orders').items.map((o) => o.orderId);
      expect(all).to.have.length(12);
      const paged: string[] = [];
      for (let page = 1; page <= 3; page++) {
        const p = listOf(style, await get(org.keys.viewer, '/orders', { limit: 5, page }), 'orders');
        paged.push(...p.items.map((o) => o.orderId));
      }
      expect(paged).to.deep.equal(all);
      const byStatus = listOf(style, await get(org.keys.viewer, '/orders', { limit: 100, status: 'pending', sortOrder: 'asc' }), 'orders').items.map((o) => o.orderId);
      const second = listOf(style, await get(org.keys.viewer, '/orders', { limit: 3, page: 2, status: 'pending', sortOrder: 'asc' }), 'orders').items.map((o) => o.orderId);
      expect(second).to.deep.equal(byStatus.slice(3, 6));
      expect(listOf(style, await get(org.keys.viewer, '/orders', { limit: 5, page: 4 }), 'orders').items).to.deep.equal([]);
    });

    it('keeps the totals when the counts are folded, and counts on after', async () => {
      const before = await orderTotals(org.keys.viewer);
      expect(await foldListCounts(testDb())).to.be.above(0);
      const slots = await testDb().execute<{ slot: number }>(sql`select distinct slot from order_counts where organization_id = ${org.organizationId}`);
      expect(slots.map((r) => r.slot)).to.deep.equal([0]);
      expect(await orderTotals(org.keys.viewer)).to.deep.equal(before);
      expect((await post(org.keys.member, { orderReference: `tot-${style}-after`, amount: '1', currency: 'USDT', chainId: CHAIN })).status).to.equal(201);
      expect(await orderTotals(org.keys.viewer)).to.deep.equal({ ...before, all: before.all + 1, pending: before.pending + 1 });
    });

    it('deep pages start in the right day: every offset page, both orders, with and without a status, is the slice of the whole list', async () => {
      const days = await createTestOrg(`days ${style}`);
      await seedPoolAddresses(days.organizationId, 'evm', 14);
      // 14 orders over four UTC days (3, 5, 1, 5), two of them at the same moment (ties by id).
      const perDay = [3, 5, 1, 5];
      const start = t.clock.now().getTime();
      try {
        for (const [d, n] of perDay.entries()) {
          for (let i = 0; i < n; i++) {
            if (!(d === 1 && i === 1)) t.clock.advance(60_000);
            expect((await post(days.keys.member, { orderReference: `day-${style}-${d}-${i}`, amount: '1', currency: 'USDT', chainId: CHAIN })).status).to.equal(201);
          }
          t.clock.advance(86_400_000);
        }
      } finally {
        t.clock.advance(start - t.clock.now().getTime());
      }
      const base = { chainId: CHAIN, currency: 'USDT', amount: 5n, toAddress: made[6].address, organizationId: days.organizationId };
      const statuses = ['confirmed', 'pending', 'confirmed', 'dropped', 'confirmed'] as const;
      for (let i = 0; i < 15; i++) {
        // Three to a day, over five days, one of them at midnight UTC.
        const at = Date.UTC(2026, 0, 10 + Math.floor(i / 3), i % 3 === 0 ? 0 : 5 + i);
        await insertTestTransfer({ ...base, status: statuses[i % 5], detectedAt: new Date(at), blockTimestamp: new Date(at) });
      }
      const check = async (path: string, query: Record<string, unknown>) => {
        const whole = listOf(style, await get(days.keys.viewer, path, { ...query, limit: 100 }), path.slice(1)).items.map((x) => x.orderId ?? x.id);
        for (const limit of [2, 3, 4]) {
          for (let page = 1; page <= Math.ceil(whole.length / limit) + 1; page++) {
            const got = listOf(style, await get(days.keys.viewer, path, { ...query, limit, page }), path.slice(1));
            expect(got.items.map((x) => x.orderId ?? x.id), `${path} ${JSON.stringify(query)} limit ${limit} page ${page}`).to.deep.equal(whole.slice((page - 1) * limit, page * limit));
            expect(got.pagination.total).to.equal(whole.length);
          }
        }
        return whole.length;
      };
      for (const sortOrder of ['desc', 'asc']) {
        expect(await check('/orders', { sortOrder })).to.equal(14);
        expect(await check('/orders', { sortOrder, status: 'pending' })).to.equal(14);
        expect(await check('/transfers', { sortOrder })).to.equal(15);
        expect(await check('/transfers', { sortOrder, status: 'confirmed' })).to.equal(9);
        expect(await check('/transfers', { sortOrder, status: 'pending', sortBy: 'createdAt' })).to.equal(3);
      }
    });

    it('counts transfers per status, following status changes and deletions, not those of no organization', async () => {
      const base = { chainId: CHAIN, currency: 'USDT', amount: 5n, toAddress: made[5].address };
      const mine = [];
      for (const status of ['pending', 'pending', 'confirmed', 'confirmed', 'confirmed'] as const) {
        mine.push(await insertTestTransfer({ ...base, status, organizationId: org.organizationId }));
      }
      await insertTestTransfer({ ...base, status: 'confirmed', organizationId: null });
      const transferTotals = async () => ({
        all: await totalOf(org.keys.viewer, '/transfers'),
        pending: await totalOf(org.keys.viewer, '/transfers', { status: 'pending' }),
        confirmed: await totalOf(org.keys.viewer, '/transfers', { status: 'confirmed' }),
        dropped: await totalOf(org.keys.viewer, '/transfers', { status: 'dropped' }),
      });
      // One confirmed transfer came with the paid order above.
      expect(await transferTotals()).to.deep.equal({ all: 6, pending: 2, confirmed: 4, dropped: 0 });
      await testDb().update(transfers).set({ status: 'dropped' }).where(eq(transfers.id, mine[0].id));
      await testDb().update(transfers).set({ confirmations: 9 }).where(eq(transfers.id, mine[2].id));
      expect(await transferTotals()).to.deep.equal({ all: 6, pending: 1, confirmed: 4, dropped: 1 });
      await testDb().delete(transfers).where(eq(transfers.id, mine[3].id));
      expect(await transferTotals()).to.deep.equal({ all: 5, pending: 1, confirmed: 3, dropped: 1 });
      const all = listOf(style, await get(org.keys.viewer, '/transfers', { limit: 100 }), 'transfers').items.map((x) => x.id);
      const page2 = listOf(style, await get(org.keys.viewer, '/transfers', { limit: 2, page: 2 }), 'transfers');
      expect(page2.items.map((x) => x.id)).to.deep.equal(all.slice(2, 4));
      expect(page2.pagination).to.include({ total: 5, totalPages: 3 });
      expect(await totalOf(other.keys.viewer, '/transfers')).to.equal(0);
    });
  });
}
