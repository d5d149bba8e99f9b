import { expect } from 'chai';
import { createTestOrg, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, testDb, type TestOrg } from '../helpers/harness';
import { checkpointAt, CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, startTcpProxy, type Spawned, type TcpProxy } from '../helpers/processes';
import { sql } from 'drizzle-orm';

/**
 * Found by the proxy rounds (issue 37): a batch of order creations committed, its answer was lost
 * with its connection, and each creation was tried again alone with its own, already stored id: a
 * 500 (orders_pkey) for an order that existed. The proxy here cuts the connection on the server's
 * answer to the first batch statement (after its commit: the answer ends with ReadyForQuery), so
 * every creation of that batch meets exactly that.
 */
describe('order creations whose batch committed but whose answer was lost (a real API process behind a proxy)', function () {
  this.timeout(120_000);
  let proxy: TcpProxy;
  let api: Spawned;
  let org: TestOrg;
  let base: string;
  let cut = 0;

  before(async () => {
    const dbUrl = new URL(TEST_DATABASE_URL);
    proxy = await startTcpProxy(Number(dbUrl.port || 5432));
    dbUrl.host = new URL(proxy.url).host;
    org = await createTestOrg('Lost answer org');
    await seedPoolAddresses(org.organizationId, 'evm', 60);
    await checkpointAt(new Date());
    // The batch statement's text goes out with its first run on a connection (Parse; postgres.js
    // has it described first): the answer on that connection that completes a SELECT (the batch's
    // rows) and ends in ReadyForQuery is sent after its commit.
    const BATCH_MARKER = Buffer.from('json_to_recordset($1::json) as i(n int, id text');
    const SELECT_COMPLETE = Buffer.from('SELECT ');
    proxy.tap(() => {
      let batchSent = false;
      return {
        fromClient(chunk) {
          if (cut === 0 && chunk.includes(BATCH_MARKER)) batchSent = true;
          return null;
        },
        fromServer(chunk) {
          if (!batchSent || cut > 0) return null;
          const ready = chunk.length >= 6 && chunk[chunk.length - 6] === 0x5a && chunk.readUInt32BE(chunk.length - 5) === 4 + 1;
          if (!ready || !chunk.includes(SELECT_COMPLETE)) return null;
          cut += 1;
          return 'rst';
        },
      };
    });
    api = spawnEntry('api/main.ts', {
      ...tokenEnv(),
      DATABASE_URL: dbUrl.toString(),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}lostanswer`,
      PORT: '0',
      LOG_LEVEL: 'info',
      RATE_LIMIT_ENABLED: 'false',
    });
    base = `http://127.0.0.1:${JSON.parse(await api.waitFor(/API listening/, 60_000)).port}`;
  });
  after(async () => {
    api?.killGroup('SIGKILL');
    await proxy?.close();
  });

  const createOrder = async (reference: string) => {
    const res = await fetch(`${base}/api/v1/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': org.keys.member },
      body: JSON.stringify({ orderReference: reference, amount: '10.5', currency: 'USDT', chainId: CHAIN }),
    });
    return { reference, status: res.status, body: await res.json() };
  };

  it('answers each order of the batch as created (201, the stored order), never 500, and stores each once', async () => {
    const answers: Awaited<ReturnType<typeof createOrder>>[] = [];
    // Concurrent creations of one organization and family wait behind the one in flight and go out
    // together: rounds of them until a batch has met the cut.
    for (let round = 0; round < 10 && cut === 0; round++) {
      answers.push(...(await Promise.all(Array.from({ length: 12 }, (_, i) => createOrder(`lost-${round}-${i}`)))));
    }
    expect(cut, 'a batch statement was cut on its answer').to.equal(1);
    const failed = answers.filter((a) => a.status !== 201 && a.status !== 503);
    expect(failed.map((a) => `${a.status} ${JSON.stringify(a.body)}`)).to.deep.equal([]);

    const created = answers.filter((a) => a.status === 201);
    // Every 201 names an order stored once, at the address it answered, under its reference.
    const rows = (await testDb().execute(
      sql`select id, order_reference, address from orders where organization_id = ${org.organizationId}`,
    )) as unknown as { id: string; order_reference: string; address: string }[];
    const byReference = new Map(rows.map((r) => [r.order_reference, r]));
    expect(rows.length, 'one row per reference').to.equal(byReference.size);
    for (const a of created) {
      const order = a.body.data ?? a.body;
      const row = byReference.get(a.reference);
      expect(row, a.reference).to.not.equal(undefined);
      expect(order.id ?? order.orderId).to.equal(row!.id);
      expect(order.address ?? order.paymentAddress).to.equal(row!.address);
    }
    // The orders of the cut batch were stored by it: answered 201, not left to look failed.
    expect(created.length).to.be.at.least(answers.length - 2);
  });
});
