import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import request from 'supertest';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { deleteCheckpoint } from '../../core/chains/checkpoints';
import type { ServiceContext } from '../../core/service/context';
import { runChainScan } from '../../core/detection/monitor';
import { chainCheckpoints, events } from '../../db/schema';
import { buildTestApp, capturedLogLines, createTestOrg, type TestApp } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { settle } from '../helpers/evm';
import { eventually } from '../helpers/wait';

/**
 * A stalled chain is visible, on anvil with Postgres and Redis: mining paused for longer than
 * CHAIN_STALL_ALERT_SECONDS (the service clock is moved past it) → head_stalled; a provider that
 * answers heads but fails eth_getLogs while the chain moves → checkpoint_stalled; every provider
 * refusing connections → providers_failing. Each episode
 * sends one alert.chain_stalled per subscribed organization, shows the chain degraded in /health
 * (still 200) and ends with a recovery log line.
 */
describe('chain stall detection on a local EVM chain (anvil)', function () {
  // A hanging provider's request takes its 10 s RPC timeout; the before-all starts anvil and deploys
  // tokens, slow on a loaded 2-core runner (it once passed 90 s in a full run).
  this.timeout(180_000);
  const STALL_SECONDS = 10;
  let chain: TestChain;
  let t: TestApp;
  let ctx: ServiceContext;
  let subscribedOrg: string;
  let otherOrg: string;

  before(async () => {
    chain = await startTestChain();
    t = buildTestApp({ env: { CHAIN_STALL_ALERT_SECONDS: String(STALL_SECONDS) } });
    ctx = t.deps;
    useTestChain(ctx.registry, chain);
    await resetCheckpointToHead(ctx, chain);
    const subscribed = await createTestOrg('anvil stall subscribed');
    const other = await createTestOrg('anvil stall not subscribed');
    subscribedOrg = subscribed.organizationId;
    otherOrg = other.organizationId;
    const hook = 'http://127.0.0.1:9/hook';
    const a = await request(t.app).post('/api/v1/webhooks/endpoints').set('X-API-Key', subscribed.keys.admin).send({ url: hook, events: ['alert.chain_stalled'] });
    expect(a.status, JSON.stringify(a.body)).to.equal(201);
    const b = await request(t.app).post('/api/v1/webhooks/endpoints').set('X-API-Key', other.keys.admin).send({ url: hook, events: ['order.completed', 'alert.reorg_beyond_confirmations'] });
    expect(b.status, JSON.stringify(b.body)).to.equal(201);
  });
  after(async () => {
    // /health reads every chain of the file's database: leave no stall behind.
    if (ctx) await deleteCheckpoint(ctx.db, LOCAL_CHAIN_ID);
    await chain?.stop();
  });

  const stallEvents = (organizationId: string) =>
    ctx.db
      .select()
      .from(events)
      .where(and(eq(events.organizationId, organizationId), eq(events.type, 'alert.chain_stalled')));
  const checkpoint = async () => (await ctx.db.select().from(chainCheckpoints).where(eq(chainCheckpoints.chainId, LOCAL_CHAIN_ID)))[0];
  const pastThreshold = () => t.clock.advance((STALL_SECONDS + 1) * 1000);
  const recoveries = () => capturedLogLines.filter((l) => l.includes(`chain ${LOCAL_CHAIN_ID} recovered from its stall`)).length;

  it('head_stalled while mining is paused: one alert per subscribed organization, /health 200 degraded, recovery logged when mining resumes', async () => {
    // Interval mining (1 block/s) as on a live chain: the scanner follows it.
    await chain.rpc('evm_setIntervalMining', [1]);
    const start = await chain.head();
    await eventually(async () => (await chain.head()) > start, 10_000, 'a block from interval mining');
    await settle(ctx);
    expect((await checkpoint()).stalledSince).to.equal(null);

    // Mining paused for longer than the threshold.
    await chain.rpc('evm_setIntervalMining', [0]);
    await settle(ctx);
    const pausedAt = await chain.head();
    pastThreshold();
    await settle(ctx);
    await settle(ctx); // still the same episode: no second alert
    const sent = await stallEvents(subscribedOrg);
    expect(sent).to.have.length(1);
    expect(sent[0].data).to.include({ chainId: LOCAL_CHAIN_ID, reason: 'head_stalled', head: pausedAt, checkpoint: pausedAt });
    expect(await stallEvents(otherOrg), 'an organization not subscribed to the alert').to.have.length(0);
    expect(capturedLogLines.some((l) => l.includes(`chain ${LOCAL_CHAIN_ID} is stalled (head_stalled)`))).to.equal(true);
    const health = await request(t.app).get('/health');
    expect(health.status).to.equal(200);
    expect(health.body.checks).to.include({ database: 'ok', redis: 'ok', chains: 'degraded' });
    expect(health.body.stalledChains).to.deep.include({ chainId: LOCAL_CHAIN_ID, reason: 'head_stalled', since: (sent[0].data as { since: string }).since, head: pausedAt, checkpoint: pausedAt });

    // Mining resumes: the episode ends with a log line, no alert.
    const before = recoveries();
    await chain.rpc('evm_setIntervalMining', [1]);
    await eventually(async () => (await chain.head()) > pausedAt, 10_000, 'mining to resume');
    await chain.rpc('evm_setIntervalMining', [0]);
    await settle(ctx);
    expect(recoveries()).to.equal(before + 1);
    expect((await checkpoint()).stalledSince).to.equal(null);
    const after = await request(t.app).get('/health');
    expect(after.status).to.equal(200);
    expect(after.body.checks.chains).to.equal('ok');
    expect(await stallEvents(subscribedOrg)).to.have.length(1);
  });

  it('checkpoint_stalled while the provider answers heads but fails eth_getLogs; recovers when it answers again', async () => {
    let failLogs = true;
    const proxy = await startGetLogsFaultProxy(chain.url, () => failLogs);
    try {
      ctx.registry.setRpcUrls(LOCAL_CHAIN_ID, [proxy.url]);
      const alertsBefore = (await stallEvents(subscribedOrg)).length;
      const stuckAt = (await checkpoint()).blockNumber;
      await chain.mine(3);
      await scanExpectingFailure();
      pastThreshold();
      await chain.mine(2);
      // The failing endpoint is backed off for a moment after each failure (500 ms here: each scan's
      // answered head call resets the count first), on the context's clock: step past it.
      t.clock.advance(1200);
      await scanExpectingFailure();
      const head = await chain.head();
      const sent = (await stallEvents(subscribedOrg)).slice(alertsBefore);
      expect(sent, 'one new alert').to.have.length(1);
      expect(sent[0].data).to.include({ chainId: LOCAL_CHAIN_ID, reason: 'checkpoint_stalled', head, checkpoint: stuckAt });
      expect(await stallEvents(otherOrg)).to.have.length(0);
      const health = await request(t.app).get('/health');
      expect(health.status).to.equal(200);
      expect(health.body.checks.chains).to.equal('degraded');
      expect(health.body.stalledChains).to.deep.include({ chainId: LOCAL_CHAIN_ID, reason: 'checkpoint_stalled', since: (sent[0].data as { since: string }).since, head, checkpoint: stuckAt });

      const before = recoveries();
      failLogs = false;
      t.clock.advance(1200); // past the last back-off, as above
      await settle(ctx);
      expect((await checkpoint()).blockNumber).to.equal(head);
      expect(recoveries()).to.equal(before + 1);
      expect((await request(t.app).get('/health')).body.checks.chains).to.equal('ok');
      expect((await stallEvents(subscribedOrg)).slice(alertsBefore)).to.have.length(1);
    } finally {
      ctx.registry.setRpcUrls(LOCAL_CHAIN_ID, [chain.url]);
      await proxy.close();
    }
  });

  it('providers_failing when every provider fails for the threshold (closed ports); recovers when one answers', async () => {
    const urls = [await closedPortUrl(), await closedPortUrl()];
    try {
      ctx.registry.setRpcUrls(LOCAL_CHAIN_ID, urls);
      const alertsBefore = (await stallEvents(subscribedOrg)).length;
      const at = (await checkpoint()).blockNumber;
      await scanExpectingFailure();
      const failingSince = (await checkpoint()).providersFailingSince;
      expect(failingSince, 'the first failure is noted').to.be.instanceOf(Date);
      expect((await checkpoint()).stalledSince, 'not yet a stall: below the threshold').to.equal(null);
      expect(await stallEvents(subscribedOrg)).to.have.length(alertsBefore);

      pastThreshold();
      // The failing endpoints are backed off for a moment after each failure (on the context's clock).
      t.clock.advance(1200);
      await scanExpectingFailure();
      await scanExpectingFailure(); // the same episode: no second alert
      expect((await checkpoint()).providersFailingSince!.getTime(), 'dated from the first failure').to.equal(failingSince!.getTime());
      const sent = (await stallEvents(subscribedOrg)).slice(alertsBefore);
      expect(sent, 'one new alert').to.have.length(1);
      expect(sent[0].data).to.include({ chainId: LOCAL_CHAIN_ID, reason: 'providers_failing', since: failingSince!.toISOString(), checkpoint: at });
      expect(await stallEvents(otherOrg)).to.have.length(0);
      expect(capturedLogLines.some((l) => l.includes(`chain ${LOCAL_CHAIN_ID} is stalled (providers_failing)`))).to.equal(true);
      const health = await request(t.app).get('/health');
      expect(health.status).to.equal(200);
      expect(health.body.checks).to.include({ database: 'ok', redis: 'ok', chains: 'degraded' });
      expect(health.body.stalledChains).to.deep.include({ chainId: LOCAL_CHAIN_ID, reason: 'providers_failing', since: failingSince!.toISOString(), head: (sent[0].data as { head: number }).head, checkpoint: at });

      // A provider answers again (and the chain moved meanwhile): the episode ends with a log line.
      const before = recoveries();
      ctx.registry.setRpcUrls(LOCAL_CHAIN_ID, [chain.url]);
      await chain.mine(1);
      await settle(ctx);
      const row = await checkpoint();
      expect(row).to.include({ providersFailingSince: null, stalledSince: null });
      expect(row.blockNumber).to.equal(await chain.head());
      expect(recoveries()).to.equal(before + 1);
      expect((await request(t.app).get('/health')).body.checks.chains).to.equal('ok');
      expect((await stallEvents(subscribedOrg)).slice(alertsBefore)).to.have.length(1);
    } finally {
      ctx.registry.setRpcUrls(LOCAL_CHAIN_ID, [chain.url]);
    }
  });

  it('says nothing about the chain while the service cannot store what it sees (the database refusing its writes past the threshold)', async () => {
    // Found by the fault run (issue 32): a database outage longer than the threshold raised
    // head_stalled for a healthy chain. The database refuses the scanner's writes of what it saw (a
    // real Postgres error from a trigger) while the rest still works, as when part of a pool
    // reconnects after an outage and part does not.
    await chain.mine(1);
    await settle(ctx);
    const alertsBefore = (await stallEvents(subscribedOrg)).length;
    const logMark = capturedLogLines.length;
    await ctx.db.execute(sql.raw(`
      create or replace function test_refuse_checkpoint_writes() returns trigger language plpgsql as $$
      begin raise exception 'checkpoint writes refused (test)' using errcode = '08006'; end $$;
      create trigger test_refuse_checkpoint_writes before update on chain_checkpoints for each row
        when (new.head_number is distinct from old.head_number or new.block_number is distinct from old.block_number)
        execute function test_refuse_checkpoint_writes();
    `));
    try {
      pastThreshold();
      for (let i = 0; i < 3; i++) {
        await chain.mine(1); // the chain is healthy: its head moves
        await scanExpectingFailure();
      }
      expect(await stallEvents(subscribedOrg)).to.have.length(alertsBefore);
      expect((await checkpoint()).stalledSince).to.equal(null);
      expect(capturedLogLines.slice(logMark).some((l) => l.includes(`chain ${LOCAL_CHAIN_ID} is stalled`))).to.equal(false);
      // What is wrong is said: the database, in /health (the scan job's error is logged and retried).
    } finally {
      await ctx.db.execute(sql.raw('drop trigger if exists test_refuse_checkpoint_writes on chain_checkpoints; drop function if exists test_refuse_checkpoint_writes();'));
    }
    // The database back: the scan catches up, and still no alert.
    await settle(ctx);
    expect((await checkpoint()).blockNumber).to.equal(await chain.head());
    expect(await stallEvents(subscribedOrg)).to.have.length(alertsBefore);
    expect((await checkpoint()).stalledSince).to.equal(null);
  });

  it('a provider that hangs is providers_failing, although the head it last gave crosses the threshold first', async () => {
    await chain.mine(1);
    await settle(ctx);
    const alertsBefore = (await stallEvents(subscribedOrg)).length;
    const headSeenAt = (await checkpoint()).headSeenAt!;
    // A provider that accepts connections and never answers (each request times out).
    const hanging = net.createServer(() => {});
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    try {
      ctx.registry.setRpcUrls(LOCAL_CHAIN_ID, [`http://127.0.0.1:${(hanging.address() as AddressInfo).port}`]);
      // Its first failure is known only when the request times out (10 s, CHAIN_STALL_ALERT_SECONDS
      // here): by then the last head is past the threshold, the first failure seconds old at most.
      t.clock.advance(1000);
      await scanExpectingFailure();
      const row = await checkpoint();
      expect(t.clock.now().getTime() - headSeenAt.getTime()).to.be.at.least(STALL_SECONDS * 1000);
      expect(row.stallReason).to.equal('providers_failing');
      const sent = (await stallEvents(subscribedOrg)).slice(alertsBefore);
      expect(sent).to.have.length(1);
      expect(sent[0].data).to.include({ chainId: LOCAL_CHAIN_ID, reason: 'providers_failing', since: row.providersFailingSince!.toISOString() });
      expect((await request(t.app).get('/health')).body.stalledChains).to.deep.include({
        chainId: LOCAL_CHAIN_ID,
        reason: 'providers_failing',
        since: row.providersFailingSince!.toISOString(),
        head: row.headNumber,
        checkpoint: row.blockNumber,
      });
    } finally {
      ctx.registry.setRpcUrls(LOCAL_CHAIN_ID, [chain.url]);
      hanging.close();
    }
    await chain.mine(1);
    await settle(ctx);
    expect(await checkpoint()).to.include({ stalledSince: null, providersFailingSince: null });
  });

  async function scanExpectingFailure(): Promise<void> {
    let failed = false;
    await runChainScan(ctx, LOCAL_CHAIN_ID).catch(() => (failed = true));
    expect(failed, 'the scan fails while eth_getLogs fails').to.equal(true);
  }
});

/** A JSON-RPC proxy in front of the chain that answers eth_getLogs with an error while `failing()`. */
async function startGetLogsFaultProxy(target: string, failing: () => boolean): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown; method: string } | { id: unknown; method: string }[];
    const calls = Array.isArray(body) ? body : [body];
    if (failing() && calls.some((c) => c.method === 'eth_getLogs')) {
      const errors = calls.map((c) => ({ jsonrpc: '2.0', id: c.id, error: { code: -32603, message: 'internal error: log index unavailable' } }));
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(Array.isArray(body) ? errors : errors[0]));
      return;
    }
    const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
    res.setHeader('content-type', 'application/json');
    res.end(await upstream.text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The URL of a local port nobody listens on (bound, then closed): connections are refused. */
async function closedPortUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
