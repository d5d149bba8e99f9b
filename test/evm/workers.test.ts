import { expect } from 'chai';
import { eq, inArray, sql } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { getCheckpoint } from '../../core/chains/checkpoints';
import { bindDepositReference } from '../../core/deposits/bindings';
import { createOrder } from '../../core/orders/orders';
import { deposits, events, transfers } from '../../db/schema';
import { eventually } from '../helpers/wait';
import { createTestOrg, testContext, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { orderRow } from '../helpers/evm';

describe('two worker processes scanning the same chain (anvil)', function () {
  this.timeout(120_000);
  let chain: TestChain;
  const workers: Spawned[] = [];

  before(async () => {
    chain = await startTestChain();
  });
  after(async () => {
    for (const w of workers) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => Promise.race([w.exited, new Promise((r) => setTimeout(r, 5000))])));
    for (const w of workers) w.child.kill('SIGKILL');
    await chain?.stop();
  });

  it('records every transfer once and emits every event once', async () => {
    const ctx = testContext();
    useTestChain(ctx.registry, chain);
    const orgId = (await createTestOrg('two workers org')).organizationId;
    await seedPoolAddresses(orgId, 'evm', 10);
    await resetCheckpointToHead(ctx, chain);

    // Two real worker processes, each with its own Redis prefix: two independent schedulers racing
    // on the same chain (only the database keeps them from doing the work twice).
    const env = (i: number) => ({
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}w${i}`,
      NETWORK: 'local',
      LOG_LEVEL: 'info',
      WORKER_QUEUES: 'chain-scan,chain-confirmations',
      CHAIN_SCAN_INTERVAL_MS: '100',
      CONFIRMATIONS_INTERVAL_MS: '100',
      RPC_URLS_ETHEREUM_LOCAL: chain.url,
      TOKEN_ETHEREUM_LOCAL_USDT: chain.tokens.USDT,
      TOKEN_ETHEREUM_LOCAL_USDC: chain.tokens.USDC,
      TOKEN_ETHEREUM_LOCAL_DAI: chain.tokens.DAI,
    });
    workers.push(spawnEntry('workers/main.ts', env(1)), spawnEntry('workers/main.ts', env(2)));
    await Promise.all(workers.map((w) => w.waitFor(/workers started/, 60_000)));
    // Orders are created once the workers look at the chain: a payment mined before the service's
    // first look since its start is undecidable by design (README "Attribution").
    await eventually(
      async () => {
        const rows = (await ctx.db.execute(sql`select max(last_seen_at) as at from chain_head_observations where chain_id = ${LOCAL_CHAIN_ID}`)) as unknown as { at: string | Date | null }[];
        return rows[0]?.at !== null && rows[0]?.at !== undefined && Date.now() - new Date(rows[0].at).getTime() < 1_000;
      },
      60_000,
      'the workers looking at the chain',
    );

    const orders: Awaited<ReturnType<typeof createOrder>>[] = [];
    for (let i = 0; i < 4; i++) {
      orders.push(await createOrder(ctx, orgId, { orderReference: `two-workers-${i}-${Date.now()}`, amount: `${i + 1}`, currency: 'USDT', chainId: LOCAL_CHAIN_ID }));
    }
    const { binding } = await bindDepositReference(ctx, orgId, { depositReference: `two-workers-dep-${Date.now()}`, protocol: 'evm' });
    const hashes: string[] = [];
    for (const [i, o] of orders.entries()) {
      // Two payments per order (the second completes it), spread over several blocks.
      hashes.push((await chain.pay(o.address, 'USDT', BigInt(i + 1) * 400_000n)).txHash);
      hashes.push((await chain.pay(o.address, 'USDT', BigInt(i + 1) * 600_000n)).txHash);
    }
    hashes.push((await chain.pay(binding.address, 'USDC', 2_000_000n)).txHash);

    // Blocks keep coming (one per poll, every 150 ms) while both workers poll.
    const done = await eventually(
      async () => {
        await chain.mine(1);
        const statuses = await Promise.all(orders.map((o) => orderRow(ctx, o.id).then((r) => r.status)));
        const [dep] = await ctx.db.select({ status: deposits.status }).from(deposits).where(eq(deposits.bindingId, binding.bindingId));
        return statuses.every((s) => s === 'completed') && dep?.status !== undefined && dep.status !== 'pending';
      },
      60_000,
      'every order completed and the deposit confirmed',
      150,
    ).catch(() => false);
    if (!done) {
      const cp = await getCheckpoint(ctx.db, LOCAL_CHAIN_ID);
      const recorded = await ctx.db.select({ id: transfers.id, status: transfers.status, block: transfers.blockNumber }).from(transfers).where(inArray(transfers.txHash, hashes));
      const activity = await ctx.db.execute(
        sql`select pid, state, wait_event_type, wait_event, extract(epoch from now() - xact_start)::int as xact_s, left(query, 160) as query from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
      );
      const diagnosis = { head: await chain.head(), checkpoint: cp, recorded, orders: await Promise.all(orders.map((o) => orderRow(ctx, o.id).then((r) => r.status))), activity };
      expect.fail(`not done in 60 s: ${JSON.stringify(diagnosis)}\nstdout 1:\n${workers[0].stdout().slice(-3000)}\nstderr 1:\n${workers[0].stderr().slice(-2000)}\nstdout 2:\n${workers[1].stdout().slice(-3000)}`);
    }
    // Both processes ran the chain jobs (each verifies the token decimals on its first run).
    for (const w of workers) {
      expect(w.stdout()).to.match(/token decimals verified/);
      expect(w.stdout()).to.not.match(/"level":(50|60)/);
    }

    const rows = await ctx.db.select().from(transfers).where(inArray(transfers.txHash, hashes));
    expect(rows).to.have.length(hashes.length);
    expect(new Set(rows.map((r) => `${r.txHash}:${r.logIndex}`)).size).to.equal(hashes.length);
    const perOrder = await ctx.db
      .select({ orderId: sql<string>`${events.data}->>'orderId'`, n: sql<number>`count(*)::int` })
      .from(events)
      .where(sql`${events.type} = 'order.completed' and ${events.data}->>'orderId' = any(${sql.param(orders.map((o) => o.id))}::text[])`)
      .groupBy(sql`${events.data}->>'orderId'`);
    expect(perOrder).to.have.length(orders.length);
    expect(perOrder.every((r) => r.n === 1)).to.equal(true);
    const depositEvents = await ctx.db
      .select({ type: events.type, n: sql<number>`count(*)::int` })
      .from(events)
      .where(sql`${events.type} like 'deposit.%' and ${events.data}->>'depositReference' = ${binding.depositReference}`)
      .groupBy(events.type);
    expect(Object.fromEntries(depositEvents.map((e) => [e.type, e.n]))).to.deep.equal({ 'deposit.pending': 1, 'deposit.confirmed': 1 });
  });
});
