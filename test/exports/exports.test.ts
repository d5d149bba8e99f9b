import { expect } from 'chai';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { parse } from 'csv-parse/sync';
import request from 'supertest';
import { recordDeposit } from '../../core/deposits/lifecycle';
import { depositBindings, orders } from '../../db/schema';
import { ORDER_EXPORT_COLUMNS } from '../../core/exports/orders-export';
import { TRANSFER_EXPORT_COLUMNS } from '../../core/exports/transfers-export';
import { DEPOSIT_EXPORT_COLUMNS } from '../../core/exports/deposits-export';
import { EXPORT_BATCH_ROWS } from '../../core/exports/csv-download';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { dataOf, expectError } from '../helpers/wire';
import { CHAIN, tokenEnv } from '../helpers/orders';

const V1 = '/api/v1';

/** A CSV answer's rows as objects keyed by its header row, after checking it is a CSV attachment. */
function csvRows(res: request.Response, header: readonly string[]): Record<string, string>[] {
  expect(res.status, res.text.slice(0, 300)).to.equal(200);
  expect(res.headers['content-type']).to.match(/^text\/csv/);
  expect(res.headers['content-disposition']).to.match(/^attachment; filename="\w+\.csv"$/);
  const lines: string[][] = parse(res.text);
  expect(lines[0]).to.deep.equal([...header]);
  return parse(res.text, { columns: true });
}

/** A refusal before any of the file: the deployment's error body, no attachment. */
function expectRefusedBeforeFile(style: 'a' | 'b', res: request.Response, status: number, code: string, aName: string): void {
  expectError(style, res, status, code, aName);
  expect(res.headers['content-type']).to.match(/^application\/json/);
  expect(res.headers['content-disposition']).to.equal(undefined);
}

for (const style of STYLES) {
  describe(`CSV exports through the API (style ${style.toUpperCase()})`, function () {
    this.timeout(60_000);
    const env = tokenEnv();
    const { app, deps, clock } = buildTestApp({ style, env });
    let org: TestOrg;
    let other: TestOrg;
    const orderIds: Record<string, string> = {};
    const createdAt: Record<string, string> = {};
    let payment: Awaited<ReturnType<typeof insertTestTransfer>>;
    const get = (path: string, key: string | null = org.keys.viewer) => {
      const req = request(app).get(V1 + path);
      return key ? req.set('X-API-Key', key) : req;
    };

    async function order(o: TestOrg, reference: string, amount: string, currency: 'USDT' | 'USDC' | 'DAI') {
      clock.advance(60_000);
      const res = await request(app).post(`${V1}/orders`).set('X-API-Key', o.keys.member).send({ orderReference: reference, amount, currency, chainId: CHAIN });
      const made = dataOf(style, res);
      orderIds[reference] = made.orderId;
      createdAt[reference] = made.createdAt;
      return made;
    }

    before(async () => {
      org = await createTestOrg('Exporting Co');
      other = await createTestOrg('Other Co');
      await seedPoolAddresses(org.organizationId, 'evm', 8);
      await seedPoolAddresses(other.organizationId, 'evm', 2);
      const paid = await order(org, 'shop-1', '10.5', 'USDT');
      await order(org, 'shop-2', '1.000000000000000001', 'DAI');
      // A reference a spreadsheet would run as a formula.
      await order(org, '=HYPERLINK("http://evil")', '0.000001', 'USDC');
      await order(other, 'not-yours', '99', 'USDT');
      // A payment to shop-1, and a stray that nobody's order held the address for.
      payment = await insertTestTransfer({
        organizationId: org.organizationId, chainId: CHAIN, currency: 'USDT', tokenAddress: env.TOKEN_ETHEREUM_LOCAL_USDT, amount: 4_000_000n, toAddress: paid.address, orderId: paid.orderId,
        blockTimestamp: new Date('2025-06-01T12:00:00.123Z'),
      });
      // What its recompute counts (the transfer is still pending): shop-1 is partly paid.
      await testDb().update(orders).set({ amountReceived: 4_000_000n }).where(eq(orders.id, paid.orderId));
      await insertTestTransfer({ organizationId: org.organizationId, chainId: CHAIN, currency: 'DAI', tokenAddress: env.TOKEN_ETHEREUM_LOCAL_DAI, amount: 2_500_000_000_000_000_001n, toAddress: paid.address, unattributedReason: 'no_holder' });
      await insertTestTransfer({ organizationId: other.organizationId, chainId: CHAIN, currency: 'USDT', amount: 1n, toAddress: paid.address, unattributedReason: 'no_holder' });
      // A deposit of 18 decimals to a reference.
      const bound = await request(app).post(`${V1}/deposits/bind`).set('X-API-Key', org.keys.member).send({ depositReference: 'alice', protocol: 'evm' });
      const [binding] = await testDb()
        .select()
        .from(depositBindings)
        .where(and(eq(depositBindings.organizationId, org.organizationId), eq(depositBindings.depositReference, 'alice'), isNull(depositBindings.unboundAt)));
      const t = await insertTestTransfer({
        organizationId: org.organizationId, chainId: CHAIN, currency: 'DAI', tokenAddress: env.TOKEN_ETHEREUM_LOCAL_DAI,
        amount: 1_000_000_000_000_000_001n, toAddress: dataOf(style, bound).address, depositBindingId: binding.id,
      });
      await deps.db.transaction((tx) => recordDeposit(tx, deps, t.id));
    });

    it('orders.csv: a Viewer gets every order of its organization with its header row and exact amounts, oldest first', async () => {
      const rows = csvRows(await get('/exports/orders.csv'), ORDER_EXPORT_COLUMNS);
      expect(rows.map((r) => r.orderId)).to.deep.equal([orderIds['shop-1'], orderIds['shop-2'], orderIds['=HYPERLINK("http://evil")']]);
      expect(rows.map((r) => [r.amount, r.currency])).to.deep.equal([['10.5', 'USDT'], ['1.000000000000000001', 'DAI'], ['0.000001', 'USDC']]);
      expect(rows[0]).to.include({ orderReference: 'shop-1', amountReceived: '4', paymentState: 'partial', status: 'pending', chainId: CHAIN, createdAt: createdAt['shop-1'] });
      // Spreadsheet-safe: the formula is text.
      expect(rows[2].orderReference).to.equal(`'=HYPERLINK("http://evil")`);
      expect(rows.map((r) => r.orderReference)).to.not.include('not-yours');
    });

    it('orders.csv takes GET /orders\' filters and a period: from inclusive, to exclusive', async () => {
      const dai = csvRows(await get('/exports/orders.csv?currency=DAI'), ORDER_EXPORT_COLUMNS);
      expect(dai.map((r) => r.orderReference)).to.deep.equal(['shop-2']);
      const searched = csvRows(await get('/exports/orders.csv?search=shop&paymentState=unpaid'), ORDER_EXPORT_COLUMNS);
      expect(searched.map((r) => r.orderReference)).to.deep.equal(['shop-2']);
      const period = `from=${encodeURIComponent(createdAt['shop-2'])}&to=${encodeURIComponent(createdAt['=HYPERLINK("http://evil")'])}`;
      const within = csvRows(await get(`/exports/orders.csv?${period}`), ORDER_EXPORT_COLUMNS);
      expect(within.map((r) => r.orderReference)).to.deep.equal(['shop-2']);
      // An empty period is a file with its header row only.
      const empty = await get('/exports/orders.csv?from=2001-01-01T00:00:00Z&to=2001-02-01T00:00:00%2B02:00');
      expect(csvRows(empty, ORDER_EXPORT_COLUMNS)).to.deep.equal([]);
    });

    it('transfers.csv: attributed and not, exact amounts, filters, never another organization\'s', async () => {
      const rows = csvRows(await get('/exports/transfers.csv'), TRANSFER_EXPORT_COLUMNS);
      expect(rows).to.have.length(3);
      expect(rows[0]).to.include({ amount: '4', currency: 'USDT', attribution: 'order', orderId: orderIds['shop-1'], orderReference: 'shop-1', credited: 'false' });
      expect(rows[1]).to.include({ amount: '2.500000000000000001', currency: 'DAI', attribution: '', unattributedReason: 'no_holder' });
      expect(rows[2]).to.include({ amount: '1.000000000000000001', attribution: 'deposit', depositReference: 'alice' });
      expect(rows.every((r) => /^\d{4}-\d\d-\d\dT.*Z$/.test(r.blockTimestamp) && /^0x[0-9a-f]{64}$/.test(r.txHash))).to.equal(true);
      const strays = csvRows(await get('/exports/transfers.csv?attributed=false'), TRANSFER_EXPORT_COLUMNS);
      expect(strays.map((r) => r.amount)).to.deep.equal(['2.500000000000000001']);
      const ofOrder = csvRows(await get(`/exports/transfers.csv?orderId=${orderIds['shop-1']}`), TRANSFER_EXPORT_COLUMNS);
      expect(ofOrder.map((r) => r.amount)).to.deep.equal(['4']);
    });

    it('deposits.csv: its reference, exact 18-decimal amount, block time; filtered by reference', async () => {
      const rows = csvRows(await get('/exports/deposits.csv'), DEPOSIT_EXPORT_COLUMNS);
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ depositReference: 'alice', amount: '1.000000000000000001', currency: 'DAI', chainId: CHAIN, status: 'pending' });
      expect(rows[0].blockTimestamp).to.match(/Z$/);
      expect(csvRows(await get('/exports/deposits.csv?depositReference=bob'), DEPOSIT_EXPORT_COLUMNS)).to.deep.equal([]);
      expect(csvRows(await get('/exports/deposits.csv?from=2999-01-01T00:00:00Z'), DEPOSIT_EXPORT_COLUMNS)).to.deep.equal([]);
    });

    it('refuses a bad period or filter in the deployment\'s error format before any of the file', async () => {
      for (const path of [
        '/exports/orders.csv?from=yesterday',
        '/exports/orders.csv?to=2025-01-01T00:00:00', // no offset
        '/exports/orders.csv?from=2025-02-01T00:00:00Z&to=2025-01-01T00:00:00Z',
        '/exports/orders.csv?status=lost',
        '/exports/orders.csv?limit=10',
        '/exports/orders.csv?search=0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD', // a broken checksum
        '/exports/transfers.csv?attributed=perhaps',
        '/exports/transfers.csv?from=2025-02-01T00:00:00Z&to=2025-01-01T00:00:00Z',
        '/exports/deposits.csv?currency=U%24D', // not a token symbol (any symbol-shaped one is a filter that may match nothing)
      ]) {
        expectRefusedBeforeFile(style, await get(path), 400, 'VALIDATION_ERROR', 'ValidationError');
      }
      const reversed = await get('/exports/deposits.csv?from=2025-02-01T00:00:00Z&to=2025-01-01T00:00:00Z');
      expect(reversed.body.message).to.contain('from must not be after to');
    });

    it('needs a key (401); a Viewer is enough', async () => {
      for (const path of ['/exports/orders.csv', '/exports/transfers.csv', '/exports/deposits.csv']) {
        expectRefusedBeforeFile(style, await get(path, null), 401, 'INVALID_API_KEY', 'Unauthorized');
        expect((await get(path, org.keys.viewer)).status).to.equal(200);
      }
    });

    it('orders.csv carries exceptions and resolution: an order settled by hand, found by ?exception=manual', async () => {
      const settled = await request(app)
        .post(`${V1}/orders/${orderIds['shop-2']}/resolve`)
        .set('X-API-Key', org.keys.admin)
        .send({ status: 'completed', reason: '=paid by bank transfer' });
      expect(settled.status, JSON.stringify(settled.body)).to.equal(200);
      const rows = csvRows(await get('/exports/orders.csv?exception=manual'), ORDER_EXPORT_COLUMNS);
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ orderReference: 'shop-2', status: 'completed', exceptions: 'manual', resolution: 'manual', resolutionReason: "'=paid by bank transfer" });
      expect(rows[0].resolvedBy).to.not.equal('');
      expect(rows[0].resolvedAt).to.match(/Z$/);
      const all = csvRows(await get('/exports/orders.csv'), ORDER_EXPORT_COLUMNS);
      expect(all.find((r) => r.orderReference === 'shop-1')).to.include({ exceptions: '', resolution: '' });
      expectRefusedBeforeFile(style, await get('/exports/orders.csv?exception=odd'), 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it("orders.csv: a completed order's tx hash, block number and the block time of that transaction", async () => {
      await testDb()
        .update(orders)
        .set({ status: 'completed', txHash: payment.txHash, blockNumber: 77, confirmations: 3, completedAt: new Date() })
        .where(eq(orders.id, orderIds['shop-1']));
      const [row] = csvRows(await get('/exports/orders.csv?status=completed&currency=USDT'), ORDER_EXPORT_COLUMNS);
      expect(row).to.include({ orderReference: 'shop-1', txHash: payment.txHash, blockNumber: '77', blockTimestamp: '2025-06-01T12:00:00.123Z', resolution: 'automatic' });
    });

    it('the other organization sees only its own rows', async () => {
      const theirOrders = csvRows(await get('/exports/orders.csv', other.keys.viewer), ORDER_EXPORT_COLUMNS);
      expect(theirOrders.map((r) => r.orderReference)).to.deep.equal(['not-yours']);
      const transfers = csvRows(await get('/exports/transfers.csv', other.keys.viewer), TRANSFER_EXPORT_COLUMNS);
      expect(transfers.map((r) => r.amount)).to.deep.equal(['0.000001']);
      expect(csvRows(await get('/exports/deposits.csv', other.keys.viewer), DEPOSIT_EXPORT_COLUMNS)).to.deep.equal([]);
    });
  });
}

describe('CSV exports have no row cap', function () {
  this.timeout(120_000);
  const { app } = buildTestApp({ env: tokenEnv() });

  it(`streams every order past several batches of ${EXPORT_BATCH_ROWS}, each once, in (createdAt, id) order`, async () => {
    const org = await createTestOrg('Busy Co');
    const n = EXPORT_BATCH_ROWS * 2 + 501;
    // Many orders share a creation time: the keyset's tie-break (id) must neither skip nor repeat them.
    await testDb().execute(sql`
      insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol, address,
        pool_address_id, status, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at, created_at, updated_at)
      select 'ord_nc' || lpad(i::text, 24, '0'), ${org.organizationId}, 'busy-' || i, 'toknc' || md5(i::text), i, 0,
        'USDT', ${CHAIN}, 'evm', '0x' || substr(md5(i::text), 1, 40), i, 'pending', 30, 5, 3,
        now(), now(), timestamptz '2025-03-01T00:00:00Z' + make_interval(secs => i / 7), now()
      from generate_series(1, ${n}) as i`);
    const res = await request(app).get(`${V1}/exports/orders.csv`).set('X-API-Key', org.keys.viewer);
    const rows = csvRows(res, ORDER_EXPORT_COLUMNS);
    expect(rows).to.have.length(n);
    expect(rows.map((r) => r.orderReference)).to.deep.equal(Array.from({ length: n }, (_, i) => `busy-${i + 1}`));
    expect(rows[n - 1].amount).to.equal((n / 1e6).toString());
  });
});
