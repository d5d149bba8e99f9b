import { createHmac, timingSafeEqual } from 'node:crypto';
import { expect } from 'chai';
import request from 'supertest';
import { ManualClock } from '../../core/platform/clock';
import { deliveryAttemptsOf } from '../../core/jobs/webhook-jobs';
import { emitEvent, type EventType } from '../../core/events/events';
import type { RunningWorkers } from '../../workers/runtime';
import { buildTestApp, capturedLogLines, createTestOrg, testConfig, testContext, testDb, type TestOrg } from '../helpers/harness';
import { dataOf, listOf } from '../helpers/wire';
import { FAST_WEBHOOK_ENV, eventually, startReceiver, type Receiver, type ReceiverAnswer } from '../helpers/webhooks';
import { startWorkerProcess } from '../../workers/runtime';

/** Verifies a signature the way the README tells receivers to. */
function verify(rawBody: Buffer, header: string | undefined, secret: string): boolean {
  const expected = Buffer.from(createHmac('sha256', secret).update(rawBody).digest('hex'));
  const given = Buffer.from(String(header ?? ''));
  return expected.length === given.length && timingSafeEqual(expected, given);
}

describe('webhook delivery (relay + delivery workers, local receiver)', function () {
  this.timeout(30_000);
  const { app, deps } = buildTestApp({ style: 'b', env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  const appA = buildTestApp({ style: 'a', env: { WEBHOOK_ALLOW_INSECURE: 'true' } }).app;
  const workerClock = new ManualClock();
  let workers: RunningWorkers;
  let receiver: Receiver;
  let org: TestOrg;
  const answers = new Map<string, (n: number) => ReceiverAnswer>();

  before(async () => {
    receiver = await startReceiver((req) => (answers.get(req.path) ?? (() => ({ status: 200 })))(req.n));
    workers = await startWorkerProcess(testContext(testConfig(FAST_WEBHOOK_ENV), workerClock));
    org = await createTestOrg('Delivery org');
  });
  after(async () => {
    await workers?.close();
    await receiver?.close();
  });

  async function endpoint(path: string, events: EventType[], secret?: string) {
    const res = await request(app)
      .post('/api/v1/webhooks/endpoints')
      .set('X-API-Key', org.keys.admin)
      .send({ url: `${receiver.url}${path}`, events, ...(secret ? { secret } : {}) });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { id: string; secret: string };
  }

  async function emit(type: EventType, data: Record<string, unknown> = {}) {
    return testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type, data }));
  }

  /** No job of these deliveries waiting, delayed or running: whatever was going to reach the receiver has. */
  const deliveriesIdle = (view: { deliveries: { id: string }[] }) => {
    const ids = new Set(view.deliveries.map((d) => d.id));
    return eventually(async () => {
      const jobs = await deps.queues['webhook-delivery'].getJobs(['waiting', 'delayed', 'active', 'prioritized']);
      return !jobs.some((job) => job && deliveryAttemptsOf(job.data).some((a) => ids.has(a.deliveryId)));
    }, 10_000, 'no delivery job left');
  };

  async function eventView(eventId: string) {
    const res = await request(app).get('/api/v1/webhooks/events').query({ limit: 100 }).set('X-API-Key', org.keys.viewer);
    expect(res.status).to.equal(200);
    return (res.body.data as any[]).find((e) => e.id === eventId);
  }

  function deliveryTo(view: any, endpointId: string) {
    const d = view.deliveries.find((x: any) => x.endpointId === endpointId);
    expect(d, `delivery to ${endpointId}`).to.not.equal(undefined);
    return d;
  }

  async function settled(eventId: string, status: 'succeeded' | 'failed') {
    return eventually(async () => {
      const e = await eventView(eventId);
      return e?.deliveries.length > 0 && e.deliveries.every((d: any) => d.status === status) ? e : null;
    }, 15_000, `event ${eventId} deliveries ${status}`);
  }

  it('signs the exact body bytes: the signature verifies, and one changed byte fails', async () => {
    const ep = await endpoint('/sig', ['order.completed', 'alert.address_pool_low']);
    const data = { orderId: 'ord_x', orderReference: 'ref-é-1', amount: '10.5', metadata: { k: 'v' } };
    const event = await emit('order.completed', data);
    const [req] = await receiver.waitFor(1, { path: '/sig' });
    expect(req.method).to.equal('POST');
    expect(req.headers['content-type']).to.equal('application/json');
    expect(req.headers['x-service-event-id']).to.equal(event.id);
    const ts = Number(req.headers['x-service-timestamp']);
    expect(Math.abs(ts - Date.now() / 1000)).to.be.lessThan(30);
    const sig = req.headers['x-service-signature'] as string;
    expect(sig).to.match(/^[0-9a-f]{64}$/);
    expect(verify(req.body, sig, ep.secret)).to.equal(true);
    const tampered = Buffer.from(req.body);
    tampered[tampered.length - 2] ^= 0x01;
    expect(verify(tampered, sig, ep.secret)).to.equal(false);
    expect(verify(req.body, sig, `${ep.secret}x`)).to.equal(false);
    const body = JSON.parse(req.body.toString('utf8'));
    expect(body).to.deep.equal({ id: event.id, type: 'order.completed', createdAt: event.createdAt.toISOString(), data });

    const alert = await emit('alert.address_pool_low', { protocol: 'evm', available: 1, total: 10, percentage: 10, threshold: 20 });
    const [, second] = await receiver.waitFor(2, { path: '/sig' });
    const alertBody = JSON.parse(second.body.toString('utf8'));
    expect(Object.keys(alertBody)).to.deep.equal(['id', 'type', 'timestamp', 'data']);
    expect(alertBody.timestamp).to.equal(alert.createdAt.toISOString());
    expect(verify(second.body, second.headers['x-service-signature'] as string, ep.secret)).to.equal(true);
    await settled(event.id, 'succeeded');
    expect(capturedLogLines.join('\n')).to.not.include(ep.secret);
  });

  it('retries a receiver that fails 3 times, on the configured schedule: exactly 4 attempts', async () => {
    answers.set('/flaky', (n) => (n <= 3 ? { status: 500, body: 'x'.repeat(5000) } : { status: 200, body: '{"received":true}' }));
    const ep = await endpoint('/flaky', ['deposit.pending']);
    const event = await emit('deposit.pending', { depositReference: 'user-1' });
    const reqs = await receiver.waitFor(4, { path: '/flaky' });
    const view = await settled(event.id, 'succeeded');
    await deliveriesIdle(view); // nothing more may arrive
    expect(receiver.on('/flaky')).to.have.length(4);
    expect(new Set(reqs.map((r) => r.headers['x-service-event-id']))).to.deep.equal(new Set([event.id]));
    // Schedule 0, 0.2, 0.4, 0.6 s with ±10% jitter. Never earlier than scheduled; how much later
    // depends on the machine's load (real time, not a clock this test controls), so no upper bound.
    const gaps = [1, 2, 3].map((i) => reqs[i].receivedAt - reqs[i - 1].receivedAt);
    [200, 400, 600].forEach((expected, i) => {
      expect(gaps[i], `gap ${i + 1}`).to.be.at.least(expected * 0.9 - 25);
    });
    const delivery = deliveryTo(view, ep.id);
    expect(delivery).to.include({ status: 'succeeded', attemptCount: 4, nextAttemptAt: null });
    expect(delivery.deliveredAt).to.be.a('string');
    expect(delivery.attempts.map((a: any) => a.attemptNumber)).to.deep.equal([1, 2, 3, 4]);
    expect(delivery.attempts.map((a: any) => a.statusCode)).to.deep.equal([500, 500, 500, 200]);
    expect(delivery.attempts[0].error).to.equal('HTTP 500');
    expect(delivery.attempts[0].responseExcerpt).to.have.length(1024);
    expect(delivery.attempts[3]).to.include({ error: null, responseExcerpt: '{"received":true}' });
    expect(delivery.attempts[0].durationMs).to.be.a('number');
  });

  it('counts a redirect as a failure and never requests its target', async () => {
    answers.set('/redirect', () => ({ status: 302, headers: { Location: `${receiver.url}/target` } }));
    const ep = await endpoint('/redirect', ['order.expired']);
    const event = await emit('order.expired', { orderId: 'ord_r' });
    const view = await settled(event.id, 'failed');
    const delivery = deliveryTo(view, ep.id);
    expect(delivery.attemptCount).to.equal(5); // the whole (compressed) schedule
    expect(delivery.attempts.map((a: any) => a.statusCode)).to.deep.equal([302, 302, 302, 302, 302]);
    expect(delivery.attempts[0].error).to.equal('redirect (302) not followed');
    expect(receiver.on('/redirect')).to.have.length(5);
    expect(receiver.on('/target')).to.have.length(0);
    // Filters: status and endpoint.
    const failed = await request(app).get('/api/v1/webhooks/events').query({ status: 'failed', type: 'order.expired' }).set('X-API-Key', org.keys.viewer);
    expect(failed.body.data.map((e: any) => e.id)).to.include(event.id);
    const succeeded = await request(app).get('/api/v1/webhooks/events').query({ status: 'succeeded', type: 'order.expired' }).set('X-API-Key', org.keys.viewer);
    expect(succeeded.body.data.map((e: any) => e.id)).to.not.include(event.id);
  });

  it('disables an endpoint that answers 410, sends it nothing more, and re-enables it on PUT enabled:true', async () => {
    let gone = true;
    answers.set('/gone', () => (gone ? { status: 410 } : { status: 204 }));
    const ep = await endpoint('/gone', ['deposit.confirmed']);
    const first = await emit('deposit.confirmed', { n: 1 });
    const view = await settled(first.id, 'failed');
    expect(deliveryTo(view, ep.id).attemptCount).to.equal(1);
    const state = (await request(app).get(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.viewer)).body;
    expect(state).to.include({ enabled: false, disabledReason: 'Receiver answered 410 Gone' });

    const second = await emit('deposit.confirmed', { n: 2 });
    await eventually(async () => (await eventView(second.id))?.dispatchedAt, 5000, 'relay');
    // The relay writes an event's deliveries in the transaction that marks it dispatched: none will follow.
    expect((await eventView(second.id)).deliveries).to.deep.equal([]);
    expect(receiver.on('/gone')).to.have.length(1);

    gone = false;
    const put = await request(app).put(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.admin).send({ enabled: true });
    expect(put.body).to.include({ enabled: true, disabledReason: null });
    const third = await emit('deposit.confirmed', { n: 3 });
    await settled(third.id, 'succeeded');
    expect(receiver.on('/gone')).to.have.length(2);
    // Redelivering the first event by hand now reaches the receiver, with the same event id.
    const redo = await request(app).post(`/api/v1/webhooks/events/${first.id}/redeliver`).set('X-API-Key', org.keys.admin);
    expect(redo.status, JSON.stringify(redo.body)).to.equal(200);
    const again = await settled(first.id, 'succeeded');
    expect(deliveryTo(again, ep.id).attempts.map((a: any) => a.statusCode)).to.deep.equal([410, 204]);
    expect(receiver.on('/gone').at(-1)!.headers['x-service-event-id']).to.equal(first.id);
  });

  it('honours Retry-After on 429', async () => {
    answers.set('/busy', (n) => (n === 1 ? { status: 429, headers: { 'Retry-After': '1' } } : { status: 200 }));
    await endpoint('/busy', ['order.completed']);
    const event = await emit('order.completed', {});
    const reqs = await receiver.waitFor(2, { path: '/busy' });
    expect(reqs[1].receivedAt - reqs[0].receivedAt).to.be.at.least(980); // the schedule alone says 200 ms
    await settled(event.id, 'succeeded');
  });

  it('times out a receiver that does not answer in time', async () => {
    answers.set('/slow', (n) => (n === 1 ? 'hang' : { status: 200 }));
    const ep = await endpoint('/slow', ['order.completed']);
    const event = await emit('order.completed', {});
    const view = await settled(event.id, 'succeeded');
    const [first, second] = deliveryTo(view, ep.id).attempts;
    expect(first).to.include({ statusCode: null, error: 'timed out after 1000 ms' });
    expect(first.durationMs).to.be.at.least(990);
    expect(second.statusCode).to.equal(200);
  });

  it('sends a webhook.test event to one endpoint only, listed in both wire styles', async () => {
    const a = await endpoint('/test-a', ['order.completed']);
    await endpoint('/test-b', ['order.completed']);
    const res = await request(app).post(`/api/v1/webhooks/endpoints/${a.id}/test`).set('X-API-Key', org.keys.admin);
    expect(res.status).to.equal(201);
    expect(res.body.type).to.equal('webhook.test');
    const [req] = await receiver.waitFor(1, { path: '/test-a' });
    const body = JSON.parse(req.body.toString());
    expect(body).to.include({ id: res.body.id, type: 'webhook.test' });
    expect(body.data.endpointId).to.equal(a.id);
    expect(verify(req.body, req.headers['x-service-signature'] as string, a.secret)).to.equal(true);
    const tested = await settled(res.body.id, 'succeeded');
    // Written with its one delivery (never fanned out): nothing can go to the other endpoint.
    expect(tested.deliveries.map((d: any) => d.endpointId)).to.deep.equal([a.id]);
    await deliveriesIdle(tested);
    expect(receiver.on('/test-b')).to.have.length(0);

    const listA = await request(appA).get('/api/v1/webhooks/events').query({ type: 'webhook.test', endpoint: a.id }).set('Authorization', `Bearer ${org.keys.viewer}`);
    const { items } = listOf('a', listA, 'events');
    expect(items.map((e) => e.id)).to.deep.equal([res.body.id]);
    expect(items[0].deliveries[0]).to.include({ endpointId: a.id, status: 'succeeded', attemptCount: 1 });
    const redoA = await request(appA).post(`/api/v1/webhooks/events/${res.body.id}/redeliver`).query({ endpoint: a.id }).set('Authorization', `Bearer ${org.keys.admin}`);
    expect(dataOf('a', redoA).id).to.equal(res.body.id);
    await receiver.waitFor(2, { path: '/test-a' });
  });

  it('delivers to endpoints that existed, were enabled and subscribed when the event was emitted', async () => {
    const sub = await endpoint('/fan-1', ['deposit.pending']);
    await endpoint('/fan-other-type', ['order.completed']);
    const event = await emit('deposit.pending', { depositReference: 'fan' });
    const later = await endpoint('/fan-2', ['deposit.pending']);
    const view = await settled(event.id, 'succeeded');
    const ids = view.deliveries.map((d: any) => d.endpointId);
    expect(ids).to.include(sub.id);
    expect(ids).to.not.include(later.id);
    expect(receiver.on('/fan-other-type')).to.have.length(0);
    expect(receiver.on('/fan-2')).to.have.length(0);
  });

  it('disables an endpoint failing continuously for WEBHOOK_DISABLE_AFTER_HOURS', async () => {
    answers.set('/down', () => ({ status: 500 }));
    const ep = await endpoint('/down', ['order.expired']);
    const first = await emit('order.expired', {});
    await eventually(
      async () => (await eventView(first.id))?.deliveries.find((d: any) => d.endpointId === ep.id)?.attempts.length === 1,
      5000,
      'first failed attempt recorded',
    );
    // The worker's clock moves past the disable window while the endpoint keeps failing.
    workerClock.advance(testConfig().webhooks.disableAfterMs);
    await settled(first.id, 'failed');
    const state = (await request(app).get(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.viewer)).body;
    expect(state.enabled).to.equal(false);
    expect(state.disabledReason).to.match(/^Failing continuously since /);
    expect(receiver.on('/down')).to.have.length(2);
    const put = await request(app).put(`/api/v1/webhooks/endpoints/${ep.id}`).set('X-API-Key', org.keys.admin).send({ enabled: true });
    expect(put.body).to.include({ enabled: true, failingSince: null, disabledReason: null });
  });
});
