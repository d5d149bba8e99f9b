import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import request from 'supertest';
import { EVENT_TYPES, emitEvent, type EventType } from '../../core/events/events';
import { ManualClock } from '../../core/platform/clock';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { buildTestApp, capturedLogLines, createTestOrg, testConfig, testContext, testDb, type TestOrg } from '../helpers/harness';
import { eventually, FAST_WEBHOOK_ENV, sleep, startReceiver, type Receiver } from '../helpers/webhooks';

describe('alert.webhook_endpoint_disabled and targeted events (relay + delivery workers)', function () {
  this.timeout(30_000);
  const { app } = buildTestApp({ style: 'b', env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  let workers: RunningWorkers;
  let receiver: Receiver;
  const workerClock = new ManualClock();

  before(async () => {
    receiver = await startReceiver((req) => (req.path.startsWith('/gone') ? { status: 410 } : req.path.startsWith('/down') ? { status: 500 } : { status: 200 }));
    workers = await startWorkerProcess(testContext(testConfig(FAST_WEBHOOK_ENV), workerClock));
  });
  after(async () => {
    await workers?.close();
    await receiver?.close();
  });

  async function endpoint(org: TestOrg, path: string, events: EventType[]) {
    const res = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}${path}`, events });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { id: string; url: string; secret: string };
  }

  async function eventsOf(org: TestOrg, type: string) {
    const res = await request(app).get('/api/v1/webhooks/events').query({ type, limit: 100 }).set('X-API-Key', org.keys.viewer);
    expect(res.status).to.equal(200);
    return res.body.data as any[];
  }

  it("tells the organization's other subscribed endpoints, once, when an endpoint is disabled", async () => {
    const org = await createTestOrg('Alert org');
    const other = await createTestOrg('Alert bystander org');
    const gone = await endpoint(org, '/gone-a', ['order.completed', 'alert.webhook_endpoint_disabled']);
    const watcher = await endpoint(org, '/watch-a', ['alert.webhook_endpoint_disabled']);
    const unsubscribed = await endpoint(org, '/orders-a', ['order.completed']);
    await endpoint(other, '/bystander-a', ['alert.webhook_endpoint_disabled']);

    // Two events at once: both deliveries can fail with 410 concurrently; one alert only.
    const emitted = await testDb().transaction(async (tx) => [
      await emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', data: { orderId: 'ord_a1' } }),
      await emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', data: { orderId: 'ord_a2' } }),
    ]);
    const [alertReq] = await receiver.waitFor(1, { path: '/watch-a' });
    const body = JSON.parse(alertReq.body.toString('utf8'));
    expect(Object.keys(body)).to.deep.equal(['id', 'type', 'timestamp', 'data']);
    expect(body.type).to.equal('alert.webhook_endpoint_disabled');
    expect(alertReq.headers['x-service-signature']).to.equal(createHmac('sha256', watcher.secret).update(alertReq.body).digest('hex'));
    expect(body.data).to.deep.include({ endpointId: gone.id, url: gone.url, reason: 'Receiver answered 410 Gone' });
    expect(body.data.disabledAt).to.be.a('string');
    expect(body.data.lastFailure).to.include({ statusCode: 410, error: 'HTTP 410', attemptNumber: 1 });
    expect(emitted.map((e) => e.id)).to.include(body.data.lastFailure.eventId);

    const endpointState = await request(app).get(`/api/v1/webhooks/endpoints/${gone.id}`).set('X-API-Key', org.keys.viewer);
    expect(endpointState.body).to.include({ enabled: false, disabledReason: 'Receiver answered 410 Gone' });
    const log = capturedLogLines.find((l) => l.includes('webhook endpoint disabled') && l.includes(gone.id));
    expect(log, 'log line').to.not.equal(undefined);
    expect(JSON.parse(log!)).to.include({ level: 'warn', reason: 'Receiver answered 410 Gone', organizationId: org.organizationId });

    // Exactly one alert event, delivered to the watcher only: never to the endpoint it is about
    // (it is subscribed, and even once re-enabled), nor to unsubscribed or other organizations' endpoints.
    await request(app).put(`/api/v1/webhooks/endpoints/${gone.id}`).set('X-API-Key', org.keys.admin).send({ enabled: true }).expect(200);
    // What must arrive is waited for; the sleep after it is an observation window for what must NOT
    // (a second alert, a copy to the re-enabled or another endpoint): several relay intervals.
    await receiver.waitFor(2, { path: '/orders-a' });
    await sleep(500);
    const alerts = await eventsOf(org, 'alert.webhook_endpoint_disabled');
    expect(alerts).to.have.length(1);
    expect(alerts[0].id).to.equal(body.id);
    expect(alerts[0].deliveries.map((d: any) => d.endpointId)).to.deep.equal([watcher.id]);
    expect(receiver.on('/watch-a')).to.have.length(1);
    expect(receiver.on('/gone-a').every((r) => JSON.parse(r.body.toString()).type === 'order.completed')).to.equal(true);
    expect(receiver.on('/orders-a').map((r) => JSON.parse(r.body.toString()).type)).to.deep.equal(['order.completed', 'order.completed']);
    expect(receiver.on('/bystander-a')).to.have.length(0);
    expect(await eventsOf(other, 'alert.webhook_endpoint_disabled')).to.deep.equal([]);
    expect(unsubscribed.id).to.be.a('string');
  });

  it('alerts when an endpoint is disabled after failing for WEBHOOK_DISABLE_AFTER_HOURS', async () => {
    const org = await createTestOrg('Alert days org');
    const down = await endpoint(org, '/down-d', ['order.expired']);
    const watcher = await endpoint(org, '/watch-d', ['alert.webhook_endpoint_disabled']);
    const event = await testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type: 'order.expired', data: { orderId: 'ord_d' } }));
    await receiver.waitFor(1, { path: '/down-d' });
    // The receiver sees the POST before the worker records its outcome: move the clock only once the
    // first attempt is recorded, or that attempt itself would find the window passed.
    await eventually(async () => {
      const [listed] = (await eventsOf(org, 'order.expired')).filter((e) => e.id === event.id);
      return listed?.deliveries.some((d: { endpointId: string; attempts: unknown[] }) => d.endpointId === down.id && d.attempts.length >= 1);
    }, 10_000, 'the first attempt to be recorded');
    // The workers' clock moves past the disable window while the endpoint keeps failing.
    const window = testConfig().webhooks.disableAfterMs;
    workerClock.advance(window);
    try {
      const [req] = await receiver.waitFor(1, { path: '/watch-d' });
      const alert = JSON.parse(req.body.toString('utf8'));
      expect(alert.data).to.include({ endpointId: down.id, url: down.url });
      expect(alert.data.reason).to.match(/^Failing continuously since /);
      expect(alert.data.lastFailure).to.include({ eventId: event.id, statusCode: 500, error: 'HTTP 500' });
      // The attempt after the clock moved disabled it: the last one the receiver saw. The receiver
      // had it before the alert was emitted; the sleep is an observation window for later attempts.
      await sleep(300);
      expect(alert.data.lastFailure.attemptNumber).to.be.at.least(2).and.equal(receiver.on('/down-d').length);
      expect(watcher.id).to.be.a('string');
    } finally {
      workerClock.advance(-window);
    }
  });

  it('lists the alert type among the subscribable ones (webhook.test is not)', async () => {
    const org = await createTestOrg('Alert types org');
    const res = await request(app)
      .post('/api/v1/webhooks/endpoints')
      .set('X-API-Key', org.keys.admin)
      .send({ url: `${receiver.url}/types`, events: [...EVENT_TYPES] });
    expect(res.status).to.equal(201);
    expect(res.body.events).to.include('alert.webhook_endpoint_disabled');
    const bad = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/types`, events: ['webhook.test'] });
    expect(bad.status).to.equal(400);
  });

  it('relays a targeted event to its one endpoint only, whatever the others subscribe to', async () => {
    const org = await createTestOrg('Targeted org');
    const target = await endpoint(org, '/target-t', ['deposit.pending']);
    const everything = await endpoint(org, '/all-t', [...EVENT_TYPES]);
    // Emitted without dispatching (as any event): the relay picks it up.
    const event = await testDb().transaction((tx) =>
      emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', targetEndpointId: target.id, data: { orderId: 'ord_t' } }),
    );
    const test = await testDb().transaction((tx) =>
      emitEvent(tx, { organizationId: org.organizationId, type: 'webhook.test', targetEndpointId: target.id, data: { endpointId: target.id } }),
    );
    const reqs = await receiver.waitFor(2, { path: '/target-t' });
    expect(reqs.map((r) => r.headers['x-service-event-id']).sort()).to.deep.equal([event.id, test.id].sort());
    await eventually(async () => (await eventsOf(org, 'order.completed')).find((e) => e.id === event.id)?.dispatchedAt, 5000, 'dispatched');
    await sleep(300); // an observation window: nothing may reach the other endpoint
    expect(receiver.on('/all-t')).to.have.length(0);
    const [listed] = (await eventsOf(org, 'order.completed')).filter((e) => e.id === event.id);
    expect(listed.deliveries.map((d: any) => d.endpointId)).to.deep.equal([target.id]);
    expect(everything.id).to.not.equal(target.id);

    // The test route: the event goes through the same path, answered with its one delivery.
    const sent = await request(app).post(`/api/v1/webhooks/endpoints/${everything.id}/test`).set('X-API-Key', org.keys.admin);
    expect(sent.status).to.equal(201);
    expect(sent.body.dispatchedAt).to.be.a('string');
    expect(sent.body.deliveries.map((d: any) => [d.endpointId, d.status])).to.deep.equal([[everything.id, 'pending']]);
    await receiver.waitFor(1, { path: '/all-t' });
    await sleep(300); // an observation window: the test event must not reach the first endpoint
    expect(receiver.on('/target-t')).to.have.length(2);
  });

  it('documents the alert in OpenAPI: a subscribable type with the alert envelope (timestamp)', async () => {
    const doc = (await request(app).get('/api/v1/openapi.json')).body;
    const alert = doc.webhooks['alert.webhook_endpoint_disabled'].post.requestBody.content['application/json'].schema;
    expect(alert.required).to.deep.equal(['id', 'type', 'timestamp', 'data']);
    expect(alert.properties.data.required).to.deep.equal(['endpointId', 'url', 'reason', 'disabledAt', 'lastFailure']);
    expect(doc.webhooks['order.completed'].post.requestBody.content['application/json'].schema.required).to.include('createdAt');
    expect(Object.keys(doc.webhooks).sort()).to.deep.equal([...EVENT_TYPES, 'webhook.test'].sort());
    const create = doc.paths['/api/v1/webhooks/endpoints'].post.requestBody.content['application/json'].schema;
    expect(create.properties.events.items.enum).to.include('alert.webhook_endpoint_disabled');
    const attempt = doc.paths['/api/v1/webhooks/events'].get.responses['200'];
    expect(JSON.stringify(attempt)).to.include('interrupted');
  });
});
