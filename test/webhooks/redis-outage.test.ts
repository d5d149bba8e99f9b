import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import request from 'supertest';
import { emitEvent } from '../../core/events/events';
import type { RunningWorkers } from '../../workers/runtime';
import { buildTestApp, createTestOrg, testDb } from '../helpers/harness';
import { eventually, freePort, sleep, startReceiver, startTestWorkers, type Receiver } from '../helpers/webhooks';

/** A throw-away Redis of our own (never the shared one), without persistence. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
  });
  return child;
}

async function stopRedis(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exited;
}

describe('webhook events emitted while Redis is stopped', function () {
  this.timeout(60_000);
  const { app } = buildTestApp({ style: 'b', env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  let receiver: Receiver;
  let redis: ChildProcess | undefined;
  let workers: RunningWorkers | undefined;

  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await workers?.close().catch(() => {});
    await stopRedis(redis);
    await receiver?.close();
  });

  it('are delivered after Redis returns (Postgres is the source of truth)', async () => {
    const port = await freePort();
    redis = await startRedis(port);
    ({ workers } = await startTestWorkers({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_PREFIX: 'sg_outage' }));
    const org = await createTestOrg('Outage org');
    const ep = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/outage`, events: ['deposit.pending'] });
    expect(ep.status).to.equal(201);

    // Redis works: an event goes through.
    const before = await testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type: 'deposit.pending', data: { n: 0 } }));
    await receiver.waitFor(1, { path: '/outage' });

    await stopRedis(redis);
    // The state changes still commit: emitting an event never touches Redis.
    const during = [];
    for (let n = 1; n <= 3; n++) {
      during.push(await testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type: 'deposit.pending', data: { n } })));
    }
    // An observation window (no job can run without Redis, so nothing signals "done"): a busy
    // machine only narrows it, it never makes the test fail.
    await sleep(700);
    expect(receiver.on('/outage')).to.have.length(1);

    // Redis comes back empty (no persistence): schedulers are re-registered and the relay fans out.
    redis = await startRedis(port);
    const reqs = await receiver.waitFor(4, { path: '/outage', timeoutMs: 30_000 });
    const ids = new Set(reqs.map((r) => r.headers['x-service-event-id']));
    expect(ids).to.deep.equal(new Set([before.id, ...during.map((e) => e.id)]));
    // The receiver answers before the worker records the result: wait for the rows.
    await eventually(async () => {
      const events = await request(app).get('/api/v1/webhooks/events').query({ endpoint: ep.body.id, status: 'succeeded' }).set('X-API-Key', org.keys.viewer);
      return events.body.pagination.total === 4;
    }, 10_000, 'four succeeded deliveries');
  });
});
