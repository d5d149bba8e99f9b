import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import request from 'supertest';
import { emitEvent } from '../../core/events/events';
import { webhookDeliveries } from '../../db/schema';
import { buildTestApp, createTestOrg, testDb, type TestOrg } from '../helpers/harness';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';
import { eventually, FAST_WEBHOOK_ENV, startReceiver, startTestWorkers, type Receiver } from '../helpers/webhooks';
import type { RunningWorkers } from '../../workers/runtime';

/**
 * Issue 40, a newcomer's trial: "Redeliver all failed" answered "No delivery failed" on an endpoint
 * whose every attempt had failed, because those deliveries were still retrying (pending until the
 * schedule is spent). The deliveries page says how many are retrying and when the next attempt is,
 * and "Send them now" makes them due at once (their waiting attempt promoted through the job port).
 */
describe('dashboard: deliveries still retrying, sent now', function () {
  this.timeout(60_000);
  // First attempt at once, the next an hour later: after one failure a delivery waits, retrying.
  const env = { ...FAST_WEBHOOK_ENV, WEBHOOK_RETRY_SCHEDULE: '0,3600,3600', WEBHOOK_RETRY_JITTER: '0' };
  const t = buildTestApp({ env });
  const origin = t.config.publicBaseUrl;
  let org: TestOrg;
  let other: TestOrg;
  let workers: RunningWorkers;
  let receiver: Receiver;
  let receiverUp = false;
  let endpointId: string;
  let owner: { email: string; password: string };

  before(async () => {
    org = await createTestOrg('Retrying Co');
    other = await createTestOrg('Other Retrying Co');
    receiver = await startReceiver(() => (receiverUp ? { status: 200, body: 'ok' } : { status: 500, body: 'down' }));
    ({ workers } = await startTestWorkers(env));
    owner = await createDashboardUser(org.organizationId, 'owner', 'owner@retrying.test');
  });
  after(async () => {
    await workers?.close();
    await receiver?.close();
  });

  const deliveriesOf = () => testDb().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId));

  it('after a failed first attempt: "no delivery failed" says how many are retrying and when; a Viewer sees it without the button', async () => {
    const res = await request(t.app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/hook`, events: ['order.completed'] });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    endpointId = res.body.id;
    for (const n of [1, 2]) {
      await testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', data: { orderId: `ord_retry${n}`, status: 'completed' } }));
    }
    await eventually(async () => {
      const rows = await deliveriesOf();
      return rows.length === 2 && rows.every((r) => r.status === 'pending' && r.attemptCount === 1 && r.nextAttemptAt !== null && r.nextAttemptAt.getTime() > Date.now() + 3000_000);
    }, 20_000, 'both deliveries retrying after one failed attempt');

    const c = dashboardClient(t.app, origin);
    await c.signIn(owner.email, owner.password);
    const page = await c.get(`/dashboard/settings/webhooks/${endpointId}`);
    expect(page.status).to.equal(200);
    expect(page.text).to.contain('2 deliveries are still retrying after failed attempts; the next attempt is at');
    expect(page.text).to.contain(`action="/dashboard/settings/webhooks/${endpointId}/send-retrying-now"`);

    const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
    const none = await c.post(`/dashboard/settings/webhooks/${endpointId}/redeliver-failed`, { _csrf: await c.csrf(), since });
    expect(none.status).to.equal(200);
    expect(none.text).to.match(/No delivery failed since [^<]*\. 2 deliveries are still retrying after failed attempts; the next attempt is at [^<]+\. Use &quot;Send them now&quot; to try them at once\./);

    const viewer = await createDashboardUser(org.organizationId, 'viewer', 'viewer@retrying.test');
    const v = dashboardClient(t.app, origin);
    await v.signIn(viewer.email, viewer.password);
    const seen = await v.get(`/dashboard/settings/webhooks/${endpointId}`);
    expect(seen.text).to.contain('2 deliveries are still retrying');
    expect(seen.text).to.not.contain('send-retrying-now');
  });

  it('Member and Viewer are refused, another organization gets 404; nothing is moved', async () => {
    const path = `/dashboard/settings/webhooks/${endpointId}/send-retrying-now`;
    const before = (await deliveriesOf()).map((r) => r.nextAttemptAt?.getTime());
    for (const [role, email] of [['member', 'member@retrying.test'], ['viewer', 'viewer2@retrying.test']] as const) {
      const u = await createDashboardUser(org.organizationId, role, email);
      const c = dashboardClient(t.app, origin);
      await c.signIn(u.email, u.password);
      expect((await c.post(path, { _csrf: await c.csrf() })).status).to.equal(403);
    }
    const outsider = await createDashboardUser(other.organizationId, 'owner', 'owner@other-retrying.test');
    const x = dashboardClient(t.app, origin);
    await x.signIn(outsider.email, outsider.password);
    expect((await x.post(path, { _csrf: await x.csrf() })).status).to.equal(404);
    expect((await deliveriesOf()).map((r) => r.nextAttemptAt?.getTime())).to.deep.equal(before);
  });

  it('"Send them now" delivers them at once (the receiver back up): one more attempt each, audit-logged', async () => {
    receiverUp = true;
    const o = dashboardClient(t.app, origin);
    await o.signIn(owner.email, owner.password);
    const res = await o.post(`/dashboard/settings/webhooks/${endpointId}/send-retrying-now`, { _csrf: await o.csrf() });
    expect(res.status).to.equal(200);
    expect(res.text).to.contain('2 retrying deliveries sent now.');
    await eventually(async () => (await deliveriesOf()).every((r) => r.status === 'succeeded'), 15_000, 'both delivered');
    expect((await deliveriesOf()).map((r) => r.attemptCount)).to.deep.equal([2, 2]);
    // Two failed first attempts, then one each now: no attempt sent twice.
    expect(receiver.requests).to.have.length(4);
    const after = await o.get(`/dashboard/settings/webhooks/${endpointId}`);
    expect(after.text).to.not.contain('still retrying');
    expect((await o.get('/dashboard/audit')).text).to.contain('webhook_deliveries.sent_now');
    // Nothing left to send: said plainly.
    const again = await o.post(`/dashboard/settings/webhooks/${endpointId}/send-retrying-now`, { _csrf: await o.csrf() });
    expect(again.text).to.contain('No delivery is waiting for a retry.');
  });
});
