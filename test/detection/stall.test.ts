import { expect } from 'chai';
import { and, eq } from 'drizzle-orm';
import request from 'supertest';
import { CHAIN_DEFINITIONS } from '../../core/chains/chains.data';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import type { ManualClock } from '../../core/platform/clock';
import { deleteCheckpoint } from '../../core/chains/checkpoints';
import { scanChain } from '../../core/detection/scan';
import { checkChainStall, noteProviderFailure } from '../../core/detection/stall';
import { events } from '../../db/schema';
import { buildTestApp, capturedLogLines, createTestOrg } from '../helpers/harness';
import { MemoryChain } from './memory-chain';

/**
 * A stalled chain is visible: one alert.chain_stalled per organization subscribed to it per
 * episode, a degraded chain in /health's body (still 200), a recovery log line.
 */
describe('chain stall detection (in-memory chain)', function () {
  this.timeout(30_000);

  it('alerts subscribed organizations once per episode, shows the chain degraded in /health with 200, and logs the recovery', async () => {
    const t = buildTestApp({ env: { CHAIN_STALL_ALERT_SECONDS: '300' } });
    const ctx = t.deps;
    const clock = t.clock as ManualClock;
    const chainId = `memory-stall-${Date.now().toString(36)}`;
    const base = CHAIN_DEFINITIONS.find((d) => d.chainId === 'ethereum-local')!;
    ctx.registry = new ChainRegistry('local', [{ ...base, chainId }], SCANNED_FAMILIES);
    const chain = new MemoryChain(ctx.registry.get(chainId)!, Math.floor(Date.now() / 1000));

    const subscribed = await createTestOrg('stall subscribed');
    const other = await createTestOrg('stall not subscribed');
    const hook = 'http://127.0.0.1:9/hook';
    const a = await request(t.app).post('/api/v1/webhooks/endpoints').set('X-API-Key', subscribed.keys.admin).send({ url: hook, events: ['alert.chain_stalled'] });
    expect(a.status, JSON.stringify(a.body)).to.equal(201);
    const b = await request(t.app).post('/api/v1/webhooks/endpoints').set('X-API-Key', other.keys.admin).send({ url: hook, events: ['order.completed'] });
    expect(b.status).to.equal(201);
    const stallEvents = (organizationId: string) =>
      ctx.db
        .select()
        .from(events)
        .where(and(eq(events.organizationId, organizationId), eq(events.type, 'alert.chain_stalled')));

    await scanChain(ctx, chain);
    chain.mineEmpty(2);
    await scanChain(ctx, chain);
    expect(await checkChainStall(ctx, chainId)).to.equal(null);

    // The head stops for longer than the threshold.
    clock.advance(301_000);
    await scanChain(ctx, chain);
    expect(await checkChainStall(ctx, chainId)).to.equal('head_stalled');
    expect(await checkChainStall(ctx, chainId)).to.equal('head_stalled');
    const sent = await stallEvents(subscribed.organizationId);
    expect(sent).to.have.length(1);
    expect(sent[0].data).to.include({ chainId, reason: 'head_stalled', head: 2, checkpoint: 2 });
    expect(await stallEvents(other.organizationId)).to.have.length(0);
    const health = await request(t.app).get('/health');
    expect(health.status).to.equal(200);
    expect(health.body.checks).to.include({ database: 'ok', redis: 'ok', chains: 'degraded' });
    const entry = (health.body.stalledChains as { chainId: string }[]).find((c) => c.chainId === chainId);
    expect(entry, JSON.stringify(health.body)).to.deep.equal({ chainId, reason: 'head_stalled', since: (sent[0].data as { since: string }).since, head: 2, checkpoint: 2 });

    // The chain moves again: the episode ends with a log line, no second alert.
    chain.mineEmpty(1);
    await scanChain(ctx, chain);
    expect(await checkChainStall(ctx, chainId)).to.equal(null);
    expect(capturedLogLines.some((l) => l.includes(`chain ${chainId} recovered from its stall`))).to.equal(true);
    const after = await request(t.app).get('/health');
    expect(((after.body.stalledChains ?? []) as { chainId: string }[]).map((c) => c.chainId)).to.not.include(chainId);

    // A new episode: providers failing for the threshold.
    await noteProviderFailure(ctx, chainId);
    clock.advance(301_000);
    expect(await checkChainStall(ctx, chainId)).to.equal('providers_failing');
    expect(await stallEvents(subscribed.organizationId)).to.have.length(2);
    // /health is shared by the whole test run: this chain leaves no stall behind.
    await deleteCheckpoint(ctx.db, chainId);
  });
});
