import { expect } from 'chai';
import { and, eq, isNull } from 'drizzle-orm';
import request from 'supertest';
import { completeDeposit, confirmDeposit, dropDeposit, recordDeposit } from '../../core/deposits/lifecycle';
import { depositBindings, deposits, transfers } from '../../db/schema';
import { newId } from '../../core/platform/ids';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { dataOf, expectError, listOf } from '../helpers/wire';
import { eventsOf, tokenEnv } from '../helpers/deposits';

const V1 = '/api/v1';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

for (const style of STYLES) {
  describe(`deposit totals, reference lists and deposit lists (style ${style.toUpperCase()})`, () => {
    const env = tokenEnv();
    const { app, deps, clock } = buildTestApp({ style, env });
    let org: TestOrg;
    let alice: string;
    let bob: string;
    const ids: Record<string, string> = {};
    const get = (path: string, k = org.keys.viewer) => request(app).get(V1 + path).set('X-API-Key', k);
    const tokenOf = { USDT: env.TOKEN_ETHEREUM_LOCAL_USDT, USDC: env.TOKEN_ETHEREUM_LOCAL_USDC, DAI: env.TOKEN_ETHEREUM_LOCAL_DAI };

    /** A transfer as the scanner records it, driven through the domain transitions to `to`. */
    async function deposit(name: string, reference: string, address: string, currency: 'USDT' | 'USDC' | 'DAI', amount: bigint, to: 'pending' | 'confirmed' | 'completed' | 'dropped') {
      clock.advance(1000);
      const [binding] = await testDb()
        .select()
        .from(depositBindings)
        .where(and(eq(depositBindings.organizationId, org.organizationId), eq(depositBindings.depositReference, reference), isNull(depositBindings.unboundAt)));
      const t = await insertTestTransfer({
        chainId: 'ethereum-local', currency, tokenAddress: tokenOf[currency], amount, toAddress: address,
        organizationId: org.organizationId, depositBindingId: binding.id, blockNumber: 100 + Object.keys(ids).length, confirmations: 1,
      });
      ids[name] = t.id;
      const tx = <T>(fn: (tx: any) => Promise<T>) => deps.db.transaction(fn);
      expect(await tx((x) => recordDeposit(x, deps, t.id))).to.have.property('depositId');
      if (to === 'dropped') {
        await testDb().update(transfers).set({ status: 'dropped' }).where(eq(transfers.id, t.id));
        expect(await tx((x) => dropDeposit(x, deps, t.id))).to.equal(true);
      }
      if (to === 'confirmed' || to === 'completed') {
        await testDb().update(transfers).set({ confirmations: 3, status: 'confirmed' }).where(eq(transfers.id, t.id));
        expect(await tx((x) => confirmDeposit(x, deps, t.id))).to.equal(true);
      }
      if (to === 'completed') expect(await tx((x) => completeDeposit(x, deps, t.id))).to.equal(true);
    }

    before(async () => {
      org = await createTestOrg('Totals org');
      await seedPoolAddresses(org.organizationId, 'evm', 3);
      const a = await request(app).post(`${V1}/deposits/bind`).set('X-API-Key', org.keys.member).send({ depositReference: 'alice', protocol: 'evm', metadata: { user: 'alice' } });
      alice = dataOf(style, a).address;
      clock.advance(1000);
      const b = await request(app).post(`${V1}/deposits/references`).set('X-API-Key', org.keys.member).send({ depositReference: 'bob', currency: 'DAI', chainId: 'ethereum-local' });
      bob = dataOf(style, b).address;
      await deposit('usdt', 'alice', alice, 'USDT', 10_500_000n, 'confirmed'); // 10.5 (6 decimals)
      await deposit('dai', 'alice', alice, 'DAI', 1_000_000_000_000_000_001n, 'completed'); // 1.000000000000000001 (18 decimals)
      await deposit('usdc', 'alice', alice, 'USDC', 1n, 'confirmed'); // 0.000001
      await deposit('pending', 'alice', alice, 'USDT', 7_000_000n, 'pending'); // not credited yet
      await deposit('dropped', 'alice', alice, 'USDT', 100_000_000n, 'dropped'); // orphaned: never counts
      await deposit('bob', 'bob', bob, 'DAI', 2_500_000_000_000_000_000n, 'confirmed'); // 2.5
    });

    it('emitted deposit.pending once per detected deposit and deposit.confirmed once per confirmation', async () => {
      expect(await eventsOf(org.organizationId, 'deposit.pending')).to.have.length(6);
      const confirmed = await eventsOf(org.organizationId, 'deposit.confirmed');
      expect(confirmed.map((e) => (e.data as any).amount)).to.deep.equal(['10.5', '1.000000000000000001', '0.000001', '2.5']);
    });

    it('GET /deposits/references/:ref: totals over credited deposits, exact across 6 and 18 decimals', async () => {
      const res = await get('/deposits/references/alice');
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const data = dataOf(style, res);
      if (style === 'a') {
        expect(data).to.have.all.keys(
          'depositReference', 'protocol', 'address', 'depositAddress', 'monitoredChains', 'monitoringTargets', 'metadata', 'createdAt', 'bindingCreatedAt',
          'totalDeposits', 'totalAmount', 'totalAmountByCurrency', 'lastDepositAt', 'boundAt', 'deposits',
        );
        expect(data).to.include({ depositReference: 'alice', protocol: 'evm', address: alice, depositAddress: alice, totalDeposits: 3, totalAmount: '11.500001000000000001' });
        expect(data.totalAmountByCurrency).to.deep.equal({ DAI: '1.000000000000000001', USDC: '0.000001', USDT: '10.5' });
        expect(data.boundAt).to.equal(data.createdAt);
        expect(data.metadata).to.deep.equal({ user: 'alice' });
        // Recent deposits, newest first, dropped left out.
        expect(data.deposits.map((d: any) => [d.amount, d.status])).to.deep.equal([
          ['7', 'pending'], ['0.000001', 'confirmed'], ['1.000000000000000001', 'completed'], ['10.5', 'confirmed'],
        ]);
        expect(data.lastDepositAt).to.equal(data.deposits[1].detectedAt);
      } else {
        expect(data).to.have.all.keys('depositReference', 'protocols', 'addresses', 'totalDeposits', 'totalAmount', 'lastDepositAt', 'metadata', 'createdAt');
        expect(data).to.include({ depositReference: 'alice', totalDeposits: 3 });
        expect(data.protocols).to.deep.equal(['evm']);
        expect(data.totalAmount).to.deep.equal({ DAI: '1.000000000000000001', USDC: '0.000001', USDT: '10.5' });
        expect(data.metadata).to.deep.equal({ user: 'alice' });
        expect(data.addresses).to.have.deep.members(
          ['USDT', 'USDC', 'DAI'].map((currency) => ({ currency, chainId: 'ethereum-local', protocol: 'evm', address: alice, createdAt: data.createdAt })),
        );
        expect(data.lastDepositAt).to.match(ISO);
      }
    });

    it('GET /deposits/references/:ref: one currency sums to that currency; unknown is 404', async () => {
      const data = dataOf(style, await get('/deposits/references/bob'));
      if (style === 'a') {
        expect(data).to.include({ totalDeposits: 1, totalAmount: '2.5' });
        expect(data.totalAmountByCurrency).to.deep.equal({ DAI: '2.5' });
      } else {
        expect(data.totalAmount).to.deep.equal({ DAI: '2.5' });
        expect(data.addresses).to.deep.equal([{ currency: 'DAI', chainId: 'ethereum-local', protocol: 'evm', address: bob, createdAt: data.createdAt }]);
      }
      expectError(style, await get('/deposits/references/nobody'), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
    });

    it('GET /deposits/references: the style list shape with totals, filters and paging', async () => {
      const res = await get('/deposits/references');
      expect(res.status).to.equal(200);
      if (style === 'a') {
        expect(res.body).to.include({ success: true });
        expect(res.body.data).to.have.all.keys('references', 'total', 'page', 'limit');
        expect(res.body.data).to.include({ total: 2, page: 1, limit: 20 });
        const [first, second] = res.body.data.references;
        expect(first).to.have.all.keys('depositReference', 'protocol', 'address', 'depositAddress', 'monitoredChains', 'totalDeposits', 'totalAmount', 'totalAmountByCurrency', 'lastDepositAt', 'boundAt', 'metadata');
        expect(first).to.include({ depositReference: 'bob', protocol: 'evm', depositAddress: bob, totalDeposits: 1, totalAmount: '2.5' });
        expect(second).to.include({ depositReference: 'alice', depositAddress: alice, totalDeposits: 3, totalAmount: '11.500001000000000001' });
      } else {
        const { items, pagination } = listOf('b', res, 'references');
        expect(pagination).to.deep.equal({ page: 1, limit: 20, total: 2, totalPages: 1, hasMore: false });
        expect(items[0]).to.have.all.keys('depositReference', 'protocols', 'addressCount', 'totalDeposits', 'totalAmount', 'lastDepositAt', 'metadata', 'createdAt');
        expect(items[0]).to.deep.include({ depositReference: 'bob', protocols: ['evm'], addressCount: 1, totalDeposits: 1, totalAmount: { DAI: '2.5' } });
        expect(items[1]).to.deep.include({ depositReference: 'alice', addressCount: 1, totalDeposits: 3, totalAmount: { DAI: '1.000000000000000001', USDC: '0.000001', USDT: '10.5' } });
      }
      const refsOf = (r: any) => (style === 'a' ? r.body.data.references : r.body.data).map((i: any) => i.depositReference);
      expect(refsOf(await get('/deposits/references?search=LI'))).to.deep.equal(['alice']);
      expect(refsOf(await get('/deposits/references?search=%25'))).to.deep.equal([]);
      expect(refsOf(await get('/deposits/references?depositReference=bob'))).to.deep.equal(['bob']);
      expect(refsOf(await get('/deposits/references?protocol=tron'))).to.deep.equal([]);
      expect(refsOf(await get('/deposits/references?sortOrder=asc'))).to.deep.equal(['alice', 'bob']);
      const paged = await get('/deposits/references?limit=1&page=2');
      expect(refsOf(paged)).to.deep.equal(['alice']);
      if (style === 'a') expect(paged.body.data).to.include({ total: 2, page: 2, limit: 1 });
      else expect(paged.body.pagination).to.deep.equal({ page: 2, limit: 1, total: 2, totalPages: 2, hasMore: false });
      expectError(style, await get('/deposits/references?limit=101'), 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it('GET /deposits: the full deposit record, both id and chain aliases', async () => {
      const res = await get('/deposits?depositReference=bob');
      const { items, pagination } = listOf(style, res, 'deposits');
      expect(pagination.total).to.equal(1);
      const [d] = items;
      const [t] = await testDb().select().from(transfers).where(eq(transfers.id, ids.bob));
      expect(d).to.have.all.keys(
        'depositId', 'id', 'depositReference', 'amount', 'currency', 'chainId', 'chain', 'protocol', 'address', 'fromAddress', 'txHash', 'logIndex', 'blockNumber',
        'status', 'confirmations', 'requiredConfirmations', 'transferId', 'detectedAt', 'confirmedAt', 'completedAt', 'droppedAt', 'metadata',
      );
      expect(d.depositId).to.match(/^dep_/);
      expect(d).to.include({
        id: d.depositId, depositReference: 'bob', amount: '2.5', currency: 'DAI', chainId: 'ethereum-local', chain: 'ethereum-local', protocol: 'evm',
        address: bob, fromAddress: t.fromAddress, txHash: t.txHash, logIndex: 0, blockNumber: t.blockNumber, status: 'confirmed', confirmations: 3,
        requiredConfirmations: 3, transferId: ids.bob, completedAt: null, droppedAt: null,
      });
      expect(d.detectedAt).to.match(ISO);
      expect(d.confirmedAt).to.match(ISO);
      expect(d.metadata).to.deep.equal({});
    });

    it('GET /deposits/:depositId: the same record as in the list; unknown or foreign is 404', async () => {
      const [listed] = listOf(style, await get('/deposits?depositReference=bob'), 'deposits').items;
      const res = await get(`/deposits/${listed.depositId}`);
      expect(res.status).to.equal(200);
      expect(dataOf(style, res)).to.deep.equal(listed);
      expectError(style, await get('/deposits/dep_nothing'), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      const other = await createTestOrg('Foreign deposit org');
      expectError(style, await get(`/deposits/${listed.depositId}`, other.keys.viewer), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
    });

    it('GET /deposits: filters, and sortBy amount compares face values across decimals', async () => {
      const amounts = async (q: string) => listOf(style, await get(`/deposits?${q}`), 'deposits').items.map((d: any) => d.amount);
      expect(await amounts('')).to.have.length(6);
      expect(await amounts('status=confirmed&sortBy=detectedAt&sortOrder=asc')).to.deep.equal(['10.5', '0.000001', '2.5']);
      expect(await amounts('status=dropped')).to.deep.equal(['100']);
      expect(await amounts('depositReference=alice&currency=USDT&sortOrder=asc')).to.deep.equal(['10.5', '7', '100']);
      expect(await amounts('depositReference=alice&sortBy=amount&sortOrder=asc')).to.deep.equal(['0.000001', '1.000000000000000001', '7', '10.5', '100']);
      expect(await amounts('depositReference=alice&sortBy=amount')).to.deep.equal(['100', '10.5', '7', '1.000000000000000001', '0.000001']);
      expect(await amounts('sortBy=confirmedAt&sortOrder=asc&depositReference=alice')).to.deep.equal(['10.5', '1.000000000000000001', '0.000001', '7', '100']);
      expect(await amounts('chainId=polygon-amoy')).to.deep.equal([]);
      const paged = listOf(style, await get('/deposits?limit=2&page=3'), 'deposits');
      expect(paged.items).to.have.length(2);
      expect(paged.pagination).to.include({ page: 3, limit: 2, total: 6, totalPages: 3 });
      expectError(style, await get('/deposits?sortBy=txHash'), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await get('/deposits?status=lost'), 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it("shows nothing of this organization's deposits to another", async () => {
      const other = await createTestOrg('Other totals org');
      const res = await get('/deposits?depositReference=alice', other.keys.viewer);
      expect(listOf(style, res, 'deposits').items).to.deep.equal([]);
      expectError(style, await get('/deposits/references/alice', other.keys.viewer), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
    });

    it('sortBy amount scales a deposit written under another NETWORK by its decimals too (the registry\'s one authority)', async () => {
      const mixed = await createTestOrg('Mixed-network deposits org');
      await seedPoolAddresses(mixed.organizationId, 'evm', 1);
      const bound = await request(app).post(`${V1}/deposits/bind`).set('X-API-Key', mixed.keys.member).send({ depositReference: 'carol', protocol: 'evm' });
      const address = dataOf(style, bound).address;
      const [binding] = await testDb().select().from(depositBindings).where(eq(depositBindings.organizationId, mixed.organizationId));
      // Inserted as rows: recordDeposit refuses a chain this deployment does not run, but rows of an
      // earlier NETWORK may remain in the database and must still list and sort at face value.
      const rows: [string, 'USDT' | 'USDC' | 'DAI', bigint][] = [
        ['ethereum-sepolia', 'USDC', 2_000_000n], // 2 (6 decimals, not in this network's chains)
        ['ethereum-local', 'DAI', 1_000_000_000_000_000_000n], // 1 (18 decimals)
        ['ethereum-local', 'USDT', 3_000_000n], // 3 (6 decimals)
      ];
      for (const [chainId, currency, amount] of rows) {
        const t = await insertTestTransfer({ chainId, currency, amount, toAddress: address, organizationId: mixed.organizationId, depositBindingId: binding.id });
        await testDb().insert(deposits).values({ id: newId('dep'), organizationId: mixed.organizationId, bindingId: binding.id, depositReference: 'carol', transferId: t.id, requiredConfirmations: 3 });
      }
      const res = await get('/deposits?sortBy=amount&sortOrder=asc', mixed.keys.viewer);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(listOf(style, res, 'deposits').items.map((d: any) => `${d.amount} ${d.currency}`)).to.deep.equal(['1 DAI', '2 USDC', '3 USDT']);
      // GET /transfers sorts the same rows by the same token list.
      const listed = await get('/transfers?sortBy=amount&sortOrder=asc', mixed.keys.viewer);
      expect(listed.status, JSON.stringify(listed.body)).to.equal(200);
      expect(listOf(style, listed, 'transfers').items.map((t: any) => `${t.amount} ${t.currency}`)).to.deep.equal(['1 DAI', '2 USDC', '3 USDT']);
    });
  });
}
