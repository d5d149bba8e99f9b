import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { createTestOrg, testDb, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, type TestOrg } from '../helpers/harness';
import { tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';

/**
 * Found by the simulation (seed 70001, 10,000 payments on a loaded 2-core machine): an unbind whose
 * statement waited on the binding's row (a scan recording a payment to it held it) past the
 * server's statement_timeout — set just below the request's bound, DATABASE_REQUEST_TIMEOUT_MS —
 * answered 500. The transaction was rolled back and nothing changed: it is the database not
 * answering in time, answered like an outage, 503 with Retry-After, and the retry succeeds.
 */
describe('a request whose statement runs out of time on a reachable database (a real API process)', function () {
  this.timeout(120_000);
  const BOUND_MS = 1500;
  let api: Spawned;
  let org: TestOrg;
  let base: string;

  before(async () => {
    org = await createTestOrg('Lock wait org');
    await seedPoolAddresses(org.organizationId, 'evm', 2);
    api = spawnEntry('api/main.ts', {
      ...tokenEnv(),
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}lockwait`,
      PORT: '0',
      LOG_LEVEL: 'info',
      DATABASE_REQUEST_TIMEOUT_MS: String(BOUND_MS),
    });
    base = `http://127.0.0.1:${JSON.parse(await api.waitFor(/API listening/, 60_000)).port}`;
  });
  after(() => api?.killGroup('SIGKILL'));

  const call = async (method: string, path: string, body?: unknown) => {
    const t0 = Date.now();
    const res = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-api-key': org.keys.admin },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as any, tookMs: Date.now() - t0 };
  };

  it('answers 503 with Retry-After within the bound while another transaction holds the row, changes nothing, and the retry succeeds', async () => {
    const bound = await call('POST', '/deposits/references', { depositReference: 'lock-wait', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
    expect(bound.status, JSON.stringify(bound.body)).to.be.oneOf([200, 201]);

    // Another transaction holds the binding's row (as a scan recording a payment to it does) for longer than the bound.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const lockTaken = new Promise<void>((r) => (locked = r));
    const holder = testDb().transaction(async (tx) => {
      await tx.execute(sql`select id from deposit_bindings where organization_id = ${org.organizationId} and deposit_reference = 'lock-wait' for update`);
      locked();
      await held;
    });
    await lockTaken;
    const refused = await call('DELETE', '/deposits/references/lock-wait');
    release();
    await holder;
    expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
    expect(refused.body).to.include({ code: 'SERVICE_UNAVAILABLE', statusCode: 503 });
    expect(Number(refused.retryAfter)).to.be.at.least(1);
    expect(refused.tookMs).to.be.below(BOUND_MS + 1000);

    // Nothing changed: still bound; the retry unbinds it.
    const [row] = (await testDb().execute(sql`select unbound_at from deposit_bindings where organization_id = ${org.organizationId} and deposit_reference = 'lock-wait'`)) as unknown as { unbound_at: unknown }[];
    expect(row.unbound_at).to.equal(null);
    const retried = await call('DELETE', '/deposits/references/lock-wait');
    expect(retried.status, JSON.stringify(retried.body)).to.equal(200);
  });
});
