import { expect } from 'chai';
import request from 'supertest';
import { emitEvent } from '../../core/events/events';
import { applyAttempt } from '../../core/webhooks/apply';
import { claimDeliveries, type ClaimedDelivery } from '../../core/webhooks/claim';
import { deliverWebhooks } from '../../core/webhooks/delivery';
import type { DeliveryResult } from '../../core/webhooks/delivery-types';
import { relayWebhookEvents } from '../../core/webhooks/relay';
import { sendWebhook } from '../../core/webhooks/sender';
import { signWebhookBody, webhookBody } from '../../core/webhooks/signing';
import { endpointSecret } from '../../core/webhooks/endpoints';
import { buildTestApp, createTestOrg, testConfig, testContext, testDb, testSql, type TestOrg } from '../helpers/harness';
import { eventually } from '../helpers/wait';
import { FAST_WEBHOOK_ENV, startReceiver, type Receiver } from '../helpers/webhooks';

/**
 * A 410 Gone must disable its endpoint even when another delivery to the same endpoint is being
 * recorded as succeeded at the same moment (issue 39: a calm simulation run left an endpoint that
 * had answered 410 enabled). Two delivery workers, each with its own process memory, against the
 * real database: the 410's transaction holds the endpoint's row and then closes the endpoint's
 * pending deliveries; the success's transaction holds its delivery's row and then clears the
 * endpoint's failing_since. Taken in opposite orders, those two locks deadlocked, and when
 * Postgres chose the 410's transaction as the victim its result was `unrecorded`: the endpoint
 * stayed enabled and the 410 was forgotten (the next attempt is a fresh POST).
 */
describe('a 410 Gone racing a succeeded delivery to the same endpoint', function () {
  this.timeout(30_000);
  const { app } = buildTestApp({ style: 'b', env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  const config = testConfig(FAST_WEBHOOK_ENV);
  let receiver: Receiver;
  let org: TestOrg;
  /** Event id → the status the receiver answers it with (200 otherwise). */
  const statusOf = new Map<string, number>();

  before(async () => {
    receiver = await startReceiver((req) => ({ status: statusOf.get(String(req.headers['x-service-event-id'])) ?? 200 }));
    org = await createTestOrg('Gone race org');
  });
  after(async () => receiver?.close());

  /** An endpoint that is failing (one real 500 recorded), and two fresh deliveries to it: one answered 410, one 200. */
  async function failingEndpointWithTwoDeliveries(path: string) {
    const ep = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}${path}`, events: ['order.completed'] });
    expect(ep.status, JSON.stringify(ep.body)).to.equal(201);
    const endpointId = String(ep.body.id);
    const emit = () => testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', data: { path } }));
    const deliveryOf = async (eventId: string) => {
      await relayWebhookEvents(testContext(config));
      const [d] = await testSql()`select id from webhook_deliveries where event_id = ${eventId} and endpoint_id = ${endpointId}`;
      return String(d.id);
    };

    const failing = await emit();
    statusOf.set(failing.id, 500);
    const [failed] = await deliverWebhooks(testContext(config), [{ deliveryId: await deliveryOf(failing.id), attempt: 1 }]);
    expect(failed.outcome).to.equal('retry');
    const [before] = await testSql()`select enabled, failing_since from webhook_endpoints where id = ${endpointId}`;
    expect(before.enabled).to.equal(true);
    expect(before.failing_since).to.not.equal(null);

    const gone = await emit();
    statusOf.set(gone.id, 410);
    const ok = await emit();
    return { endpointId, goneDelivery: await deliveryOf(gone.id), okDelivery: await deliveryOf(ok.id) };
  }

  /** Backends of this database waiting for a lock. */
  async function lockWaiters(): Promise<number> {
    const [r] = await testSql()`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
    return r.n;
  }

  /**
   * Runs `gone` (the 410's recording) and `succeeded` (the other delivery's) so that their
   * transactions overlap the way two workers' can: the 410's transaction is held, by another
   * session's lock on the organization row, right after it has taken the endpoint's row (its
   * alert event's foreign key check waits); the success's transaction then starts and waits for
   * the endpoint too. Once the success has waited past deadlock_timeout (its one deadlock check
   * found no cycle), the hold is released: the 410's transaction goes on to close the endpoint's
   * pending deliveries. Before the fix it then waited for the succeeded delivery's row, which the
   * success's transaction held — a cycle that its own deadlock check found, aborting it.
   */
  async function overlap<A, B>(gone: () => Promise<A>, succeeded: () => Promise<B>): Promise<[A, B]> {
    const [{ deadlock_timeout: timeout }] = await testSql()`select setting::int as deadlock_timeout from pg_settings where name = 'deadlock_timeout'`;
    const hold = await testSql().reserve();
    try {
      await hold`begin`;
      await hold`select id from organizations where id = ${org.organizationId} for update`;
      const first = gone();
      await eventually(async () => (await lockWaiters()) >= 1, 10_000, 'the 410 recording waits for the organization row');
      const second = succeeded();
      await eventually(async () => (await lockWaiters()) >= 2, 10_000, 'the success recording waits for the endpoint row');
      await new Promise((r) => setTimeout(r, Number(timeout) + 300));
      await hold`commit`;
      return await Promise.all([first, second]);
    } finally {
      hold.release();
    }
  }

  async function expectDisabledBy410(endpointId: string, goneDelivery: string, goneResult: DeliveryResult) {
    const why = goneResult.outcome === 'unrecorded' ? (goneResult.error as Error & { cause?: { code?: string; message?: string } }).cause : undefined;
    expect(goneResult.outcome, `the 410 was not recorded: ${why?.code} ${why?.message}`).to.equal('failed');
    const [ep] = await testSql()`select enabled, disabled_reason from webhook_endpoints where id = ${endpointId}`;
    expect(ep).to.deep.equal({ enabled: false, disabled_reason: 'Receiver answered 410 Gone' });
    const [d] = await testSql()`select status from webhook_deliveries where id = ${goneDelivery}`;
    expect(d.status).to.equal('failed');
    const attempts = await testSql()`select attempt_number, status_code, outcome from webhook_attempts where delivery_id = ${goneDelivery}`;
    expect(attempts.map((a) => [a.attempt_number, a.status_code, a.outcome])).to.deep.equal([[1, 410, 'failed']]);
    const alerts = await testSql()`select count(*)::int as n from events where type = 'alert.webhook_endpoint_disabled' and data->>'endpointId' = ${endpointId}`;
    expect(alerts[0].n).to.equal(1);
  }

  it('disables the endpoint while another worker records a batch of successes to it (applySucceededAttempts)', async () => {
    const { endpointId, goneDelivery, okDelivery } = await failingEndpointWithTwoDeliveries('/gone-batch');
    const [[goneResult], [okResult]] = await overlap(
      () => deliverWebhooks(testContext(config), [{ deliveryId: goneDelivery, attempt: 1 }]),
      () => deliverWebhooks(testContext(config), [{ deliveryId: okDelivery, attempt: 1 }]),
    );
    await expectDisabledBy410(endpointId, goneDelivery, goneResult);
    expect(okResult.outcome).to.equal('succeeded');
    const ok = await testSql()`select outcome, status_code from webhook_attempts where delivery_id = ${okDelivery}`;
    expect(ok.map((a) => [a.outcome, a.status_code])).to.deep.equal([['succeeded', 200]]);
  });

  it('disables the endpoint while another worker records one success to it on its own (applyAttempt)', async () => {
    const { endpointId, goneDelivery, okDelivery } = await failingEndpointWithTwoDeliveries('/gone-one');
    const other = testContext(config);
    const [claimed] = (await claimDeliveries(other, [{ deliveryId: okDelivery, attempt: 1 }])) as ClaimedDelivery[];
    expect(claimed.endpoint.failingSince).to.not.equal(null);
    const body = webhookBody(claimed.event);
    const startedAt = new Date();
    const sent = await sendWebhook({
      url: claimed.endpoint.url,
      body,
      timeoutMs: config.webhooks.timeoutMs,
      allowInsecure: true,
      headers: { 'Content-Type': 'application/json', 'X-Service-Event-Id': claimed.event.id, 'X-Service-Signature': signWebhookBody(body, endpointSecret(claimed.endpoint, config)) },
    });
    expect(sent.statusCode).to.equal(200);
    const [[goneResult], okResult] = await overlap(
      () => deliverWebhooks(testContext(config), [{ deliveryId: goneDelivery, attempt: 1 }]),
      () => applyAttempt(other, claimed, sent, { outcome: 'succeeded', error: null, next: { state: 'succeeded' } }, startedAt),
    );
    await expectDisabledBy410(endpointId, goneDelivery, goneResult);
    expect(okResult.outcome).to.equal('succeeded');
  });
});
