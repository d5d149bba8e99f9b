import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { emitEvent } from '../../core/events/events';
import { buildTestApp, createTestOrg, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, testDb } from '../helpers/harness';
import { eventually, startReceiver, type Receiver } from '../helpers/webhooks';

const ROOT = path.resolve(__dirname, '../..');

/** A real worker process  (`tsx workers/main.ts`) on the run's database and Redis prefix. */
export function spawnWorker(env: Record<string, string> = {}): { child: ChildProcess; output: string[]; ready: Promise<void> } {
  const output: string[] = [];
  const child = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), ['workers/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: TEST_REDIS_PREFIX,
      NETWORK: 'local',
      LOG_LEVEL: 'info',
      WORKER_QUEUES: 'webhook-relay,webhook-delivery',
      WEBHOOK_ALLOW_INSECURE: 'true',
      WEBHOOK_TIMEOUT_MS: '1500',
      WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.4',
      WEBHOOK_RELAY_INTERVAL_MS: '100',
      WEBHOOK_REQUEUE_AFTER_MS: '500',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: tsx runs the worker in a child node process, and both must die.
    detached: true,
  });
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.join('').includes('workers started')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
    child.once('exit', (code, signal) => reject(new Error(`worker exited early (${code ?? signal}): ${output.join('')}`)));
  });
  ready.catch(() => {});
  return { child, output, ready };
}

/** Signals the worker's whole process group (tsx and the node process running the worker). */
export async function stopWorker(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const running = child.exitCode === null && child.signalCode === null;
  const exited = running ? new Promise<void>((resolve) => child.once('exit', () => resolve())) : Promise.resolve();
  try {
    process.kill(-child.pid!, signal);
  } catch {
    return; // the group is gone already
  }
  await exited;
  // The group's other member (the node process tsx started) may outlive tsx for a moment.
  const groupGone = () => {
    try {
      process.kill(-child.pid!, 0);
      return false;
    } catch {
      return true;
    }
  };
  await eventually(groupGone, 2500, 'the worker process group to exit', 50).catch(() => {});
}

describe('webhook delivery survives a worker killed mid-delivery (SIGKILL), and its attempt log says so', function () {
  this.timeout(60_000);
  const { app } = buildTestApp({ style: 'b', env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  let receiver: Receiver;
  const children: ChildProcess[] = [];

  before(async () => {
    receiver = await startReceiver((req) => (req.path === '/kill' && req.n === 1 ? 'hang' : { status: 200 }));
  });
  after(async () => {
    for (const c of children) await stopWorker(c, 'SIGKILL');
    await receiver?.close();
  });

  it('delivers again with the same event id after another worker starts, records the killed attempt as interrupted; the receiver sees one distinct event id', async () => {
    const org = await createTestOrg('Kill org');
    const created = await request(app)
      .post('/api/v1/webhooks/endpoints')
      .set('X-API-Key', org.keys.admin)
      .send({ url: `${receiver.url}/kill`, events: ['order.completed'] });
    expect(created.status).to.equal(201);

    const first = spawnWorker();
    children.push(first.child);
    await first.ready;
    const event = await testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', data: { orderId: 'ord_kill' } }));
    await receiver.waitFor(1, { path: '/kill', timeoutMs: 20_000 }); // the worker is now inside the request
    await stopWorker(first.child, 'SIGKILL');

    const second = spawnWorker();
    children.push(second.child);
    await second.ready;
    const reqs = await receiver.waitFor(2, { path: '/kill', timeoutMs: 20_000 });
    expect(reqs.map((r) => r.headers['x-service-event-id'])).to.deep.equal([event.id, event.id]);
    expect(reqs[1].body.equals(reqs[0].body)).to.equal(true); // the same bytes, the same signature
    expect(reqs[1].headers['x-service-signature']).to.equal(reqs[0].headers['x-service-signature']);

    const delivered = await eventually(async () => {
      const res = await request(app).get('/api/v1/webhooks/events').query({ status: 'succeeded' }).set('X-API-Key', org.keys.viewer);
      return (res.body.data as any[]).find((e) => e.id === event.id);
    }, 10_000, 'delivery succeeded');
    const [delivery] = delivered.deliveries;
    expect(delivery).to.include({ status: 'succeeded', attemptCount: 2 });
    // The killed attempt is recorded as interrupted when the next attempt claims the delivery, so
    // the attempt log explains the gap; the attempt that completed is recorded as it ended.
    expect(delivery.attempts.map((a: any) => [a.attemptNumber, a.outcome, a.statusCode])).to.deep.equal([
      [1, 'interrupted', null],
      [2, 'succeeded', 200],
    ]);
    const [interrupted, completed] = delivery.attempts;
    expect(interrupted).to.include({ durationMs: null, responseExcerpt: null });
    expect(interrupted.error).to.match(/^interrupted: .*worker stopped/);
    // It started when the killed worker claimed it: before the receiver saw the first request.
    expect(Date.parse(interrupted.startedAt)).to.be.at.most(reqs[0].receivedAt);
    expect(Date.parse(completed.startedAt)).to.be.greaterThan(Date.parse(interrupted.startedAt));
    // An observation window, not a wait for something to happen: a duplicate send would come from the
    // killed worker's job, which BullMQ only reclaims after its stall interval (30 s, too long to wait
    // for here); on a busy machine the window only narrows, it never makes the test fail.
    await new Promise((r) => setTimeout(r, 500));
    expect(new Set(receiver.on('/kill').map((r) => r.headers['x-service-event-id'])).size).to.equal(1);
    expect(receiver.on('/kill')).to.have.length(2);
    expect(created.body.secret).to.be.a('string');
    expect([...first.output, ...second.output].join('')).to.not.include(created.body.secret);
    await stopWorker(second.child);
  });
});
