import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { createTestOrg, testDb, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL } from '../helpers/harness';
import { CHAIN, checkpointAt, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';

/**
 * Found by the fault run (issue 32, two API processes): concurrent creations with one
 * orderReference on a pool with a single address left answered 503 NO_AVAILABLE_ADDRESSES instead
 * of 409 in 3 of 180 races (the loser found the pool empty before the winner's order was visible).
 * Every loser is a 409 naming the winner's order.
 */
describe('the duplicate-reference race on an exhausted pool (two real API processes)', function () {
  this.timeout(180_000);
  const apis: Spawned[] = [];
  const bases: string[] = [];

  before(async () => {
    const env = { ...tokenEnv(), DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: `${TEST_REDIS_PREFIX}race`, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_ENABLED: 'false' };
    for (let i = 0; i < 2; i++) apis.push(spawnEntry('api/main.ts', env));
    for (const api of apis) bases.push(`http://127.0.0.1:${JSON.parse(await api.waitFor(/API listening/, 60_000)).port}`);
  });
  after(() => {
    for (const api of apis) api.killGroup('SIGKILL');
  });

  it('the loser of a slow winner (its order committed 1 s after it took the last address) is 409, not 503', async () => {
    // The window widened for certain: the winner's statement sleeps after its insert (a trigger),
    // holding the pool's last address while its order is not yet visible.
    await checkpointAt(new Date());
    const org = await createTestOrg('Slow race org');
    await seedPoolAddresses(org.organizationId, 'evm', 1);
    const db = testDb();
    await db.execute(
      sql.raw(`create or replace function test_slow_order_insert() returns trigger language plpgsql as $$
                 begin if new.order_reference like 'slow-%' then perform pg_sleep(1); end if; return new; end $$;
               create trigger test_slow_order_insert after insert on orders for each row execute function test_slow_order_insert();`),
    );
    try {
      const body = JSON.stringify({ orderReference: `slow-${Date.now()}`, amount: '1', currency: 'USDT', chainId: CHAIN });
      const post = (base: string) =>
        fetch(`${base}/api/v1/orders`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': org.keys.member }, body }).then(async (r) => ({ status: r.status, body: await r.json() }));
      const first = post(bases[0]);
      // The first holds the pool's last address, its order not yet committed: its statement sleeps.
      const sleeping = async () => {
        const [row] = (await db.execute(sql`select count(*)::int as n from pg_stat_activity where wait_event = 'PgSleep' and datname = current_database()`)) as unknown as { n: number }[];
        return row.n > 0;
      };
      for (let i = 0; i < 100 && !(await sleeping()); i++) await new Promise((r) => setTimeout(r, 20));
      const second = await post(bases[1]);
      const winner = await first;
      expect(winner.status).to.equal(201);
      expect(second.status, JSON.stringify(second.body)).to.equal(409);
      expect(second.body).to.include({ code: 'DUPLICATE_ORDER_REFERENCE', existingOrderId: winner.body.orderId });
    } finally {
      await db.execute(sql.raw('drop trigger if exists test_slow_order_insert on orders; drop function if exists test_slow_order_insert();'));
    }
  });

  it('one creation wins, every concurrent duplicate is 409 with the winner\'s id, never 503', async () => {
    await checkpointAt(new Date());
    const org = await createTestOrg('Race org');
    const rounds = 20;
    for (let round = 0; round < rounds; round++) {
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      const body = JSON.stringify({ orderReference: `race-${Date.now()}-${round}`, amount: '1', currency: 'USDT', chainId: CHAIN });
      const answers = await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          const res = await fetch(`${bases[i % 2]}/api/v1/orders`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': org.keys.member }, body });
          return { status: res.status, body: await res.json() };
        }),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses, `round ${round}: ${JSON.stringify(answers.map((a) => a.body))}`).to.deep.equal([201, 409, 409, 409, 409, 409]);
      const winner = answers.find((a) => a.status === 201)!.body.orderId;
      for (const a of answers.filter((x) => x.status === 409)) expect(a.body.existingOrderId).to.equal(winner);
    }
  });
});
