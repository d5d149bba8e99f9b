import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { SMTPServer } from 'smtp-server';
import request from 'supertest';
import { ManualClock } from '../../core/platform/clock';
import { checkPoolLevel } from '../../core/pool/alerts';
import { alertEmails } from '../../db/schema';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { buildTestApp, createTestOrg, TEST_REDIS_PREFIX, testConfig, testContext, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { addJobsAndWait } from '../helpers/run-job';

interface Received {
  from: string;
  to: string[];
  raw: string;
}

/** A local SMTP sink: accepts everything, or refuses the next message(s) with a temporary error. */
async function startSmtpSink() {
  const received: Received[] = [];
  let refuseNext = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (c: Buffer) => (raw += c.toString()));
      stream.on('end', () => {
        if (refuseNext > 0) {
          refuseNext--;
          return callback(Object.assign(new Error('Mailbox busy, try later'), { responseCode: 451 }));
        }
        received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    refuse(n: number) {
      refuseNext = n;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('alerts by e-mail (SMTP sink)', function () {
  this.timeout(60_000);
  let sink: Awaited<ReturnType<typeof startSmtpSink>>;
  let workers: RunningWorkers;
  let org: TestOrg;
  const clock = new ManualClock();
  const { app } = buildTestApp();
  let env: Record<string, string>;

  before(async () => {
    sink = await startSmtpSink();
    // A prefix of its own: this worker process registers the job schedulers, which must not run
    // in the queues other suites share.
    env = { REDIS_PREFIX: `${TEST_REDIS_PREFIX}mail`, SMTP_URL: sink.url, SMTP_FROM: 'Stablegate <alerts@stablegate.example>', ALERT_EMAILS_PER_HOUR: '2', WORKER_QUEUES: 'alert-email', ALERT_EMAIL_INTERVAL_MS: '3600000' };
    workers = await startWorkerProcess(testContext(testConfig(env), clock));
    org = await createTestOrg('Mailed org');
    await seedPoolAddresses(org.organizationId, 'evm', 10);
  });
  after(async () => {
    await workers?.close();
    await sink?.close();
  });

  const runJob = () => addJobsAndWait(workers.queues['alert-email']);
  const rowOf = async (eventId: string) => (await testDb().select().from(alertEmails).where(eq(alertEmails.eventId, eventId)))[0];
  /** Raises alert.address_pool_low through the real check (threshold above the pool), then clears it for the next. */
  async function raisePoolAlert(): Promise<string> {
    await request(app).put('/api/v1/config/address_pool.low_threshold.evm').set('X-API-Key', org.keys.admin).send({ value: 100 }).expect(200);
    const outcome = await checkPoolLevel(testDb(), org.organizationId, 'evm', new Date());
    expect(outcome.eventId).to.be.a('string');
    await request(app).put('/api/v1/config/address_pool.low_threshold.evm').set('X-API-Key', org.keys.admin).send({ value: 0 }).expect(200);
    await checkPoolLevel(testDb(), org.organizationId, 'evm', new Date());
    return outcome.eventId!;
  }

  it('alerts.email is validated and stored normalised', async () => {
    const put = (value: unknown) => request(app).put('/api/v1/config/alerts.email').set('X-API-Key', org.keys.admin).send({ value });
    for (const bad of ['not-an-address', 'ops@example.com,,x@example.com', 'ops@example', 42, Array.from({ length: 11 }, (_, i) => `a${i}@example.com`).join(',')]) {
      const res = await put(bad);
      expect(res.status, String(bad)).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_ERROR');
    }
    const ok = await put(' Ops@Example.com , second@example.com,ops@example.com ');
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    const got = await request(app).get('/api/v1/config/alerts.email').set('X-API-Key', org.keys.admin);
    expect(JSON.stringify(got.body)).to.include('"ops@example.com,second@example.com"');
  });

  it('an alert event is mailed by the alert-email job to every configured address', async () => {
    const eventId = await raisePoolAlert();
    await runJob();
    expect(sink.received).to.have.length(1);
    const mail = sink.received[0];
    // Undo quoted-printable soft line breaks and escapes (long lines of the text part).
    mail.raw = mail.raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
    expect(mail.to).to.have.members(['ops@example.com', 'second@example.com']);
    expect(mail.from).to.equal('alerts@stablegate.example');
    expect(mail.raw).to.match(/^Subject: \[Stablegate\] Address pool low: 10 of 10 evm addresses available/m);
    expect(mail.raw).to.include(org.organizationId);
    expect(mail.raw).to.include(eventId);
    expect(mail.raw).to.match(/^X-Stablegate-Event-Id: evt_/im);
    expect(await rowOf(eventId)).to.include({ status: 'sent', attempts: 1, recipients: 'ops@example.com,second@example.com' });
    // Mailed once: another run sends nothing more.
    await runJob();
    expect(sink.received).to.have.length(1);
  });

  it('a refused send is retried after its backoff, then delivered', async () => {
    sink.refuse(1);
    const eventId = await raisePoolAlert();
    await runJob();
    expect(sink.received).to.have.length(1);
    const failed = await rowOf(eventId);
    expect(failed).to.include({ status: 'pending', attempts: 1 });
    expect(failed.lastError).to.match(/451|busy/i);
    await runJob(); // not due yet
    expect(sink.received).to.have.length(1);
    clock.advance(31_000);
    await runJob();
    expect(sink.received).to.have.length(2);
    expect(await rowOf(eventId)).to.include({ status: 'sent', attempts: 2 });
  });

  it('is rate-limited per organization (ALERT_EMAILS_PER_HOUR)', async () => {
    const eventId = await raisePoolAlert();
    await runJob();
    expect(sink.received).to.have.length(2); // two sent within the hour already
    expect((await rowOf(eventId)).status).to.equal('rate_limited');
    // Another organization is not held back by this one's limit.
    const other = await createTestOrg('Other mailed org');
    await seedPoolAddresses(other.organizationId, 'evm', 4);
    await request(app).put('/api/v1/config/alerts.email').set('X-API-Key', other.keys.admin).send({ value: 'other@example.com' }).expect(200);
    await request(app).put('/api/v1/config/address_pool.low_threshold.evm').set('X-API-Key', other.keys.admin).send({ value: 100 }).expect(200);
    const outcome = await checkPoolLevel(testDb(), other.organizationId, 'evm', new Date());
    await runJob();
    expect(sink.received.map((m) => m.to)).to.deep.include(['other@example.com']);
    expect((await rowOf(outcome.eventId!)).status).to.equal('sent');
  });

  it('an organization without alerts.email gets no mail', async () => {
    const quiet = await createTestOrg('Quiet org');
    await seedPoolAddresses(quiet.organizationId, 'evm', 2);
    await request(app).put('/api/v1/config/address_pool.low_threshold.evm').set('X-API-Key', quiet.keys.admin).send({ value: 100 }).expect(200);
    const outcome = await checkPoolLevel(testDb(), quiet.organizationId, 'evm', new Date());
    const before = sink.received.length;
    await runJob();
    expect(sink.received.length).to.equal(before);
    expect((await rowOf(outcome.eventId!)).status).to.equal('no_recipients');
  });
});
