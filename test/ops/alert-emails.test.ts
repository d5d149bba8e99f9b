import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import { and, eq, isNull } from 'drizzle-orm';
import { SMTPServer } from 'smtp-server';
import request from 'supertest';
import { ManualClock } from '../../core/platform/clock';
import { checkPoolLevel } from '../../core/pool/alerts';
import { alertEmails, alertRecipients } from '../../db/schema';
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

  /** Undoes quoted-printable soft line breaks and escapes (long lines of the text part). */
  const decoded = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
  const confirmationsIn = (mails: Received[]) => mails.filter((m) => /^Subject: \[Stablegate\] Confirm/m.test(m.raw));
  const tokenOf = (mail: Received) => /\/alerts\/confirm\/([A-Za-z0-9_-]{32})/.exec(decoded(mail.raw))![1];
  /** Runs the job (it sends the confirmation e-mails due) and follows every confirmation link it sent. */
  async function confirmAllNew(): Promise<string[]> {
    const before = sink.received.length;
    await runJob();
    const mails = confirmationsIn(sink.received.slice(before));
    for (const mail of mails) await request(app).post(`/alerts/confirm/${tokenOf(mail)}`).expect(200);
    sink.received.splice(before); // the tests below count alert e-mails only
    return mails.flatMap((m) => m.to);
  }
  const put = (value: unknown, key = org.keys.admin) => request(app).put('/api/v1/config/alerts.email').set('X-API-Key', key).send({ value });

  it('alerts.email is validated and stored normalised', async () => {
    for (const bad of [
      'not-an-address',
      'ops@example.com,,x@example.com',
      'ops@example',
      42,
      Array.from({ length: 11 }, (_, i) => `a${i}@example.com`).join(','),
      // Source routes: a relay would forward to another address than the one confirmed.
      'victim%evil.test@relay.example',
      'evil.test!victim@relay.example',
    ]) {
      const res = await put(bad);
      expect(res.status, String(bad)).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_ERROR');
    }
    const ok = await put(' Ops@Example.com , second@example.com,ops@example.com ');
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    const got = await request(app).get('/api/v1/config/alerts.email').set('X-API-Key', org.keys.admin);
    expect(JSON.stringify(got.body)).to.include('"ops@example.com,second@example.com"');
  });

  it('a new recipient gets one confirmation e-mail and no alert until it confirms through its link', async () => {
    const eventId = await raisePoolAlert();
    await runJob();
    // Two confirmation e-mails, no alert: nobody agreed yet.
    expect(sink.received.map((m) => m.to)).to.have.deep.members([['ops@example.com'], ['second@example.com']]);
    expect(confirmationsIn(sink.received)).to.have.length(2);
    expect((await rowOf(eventId)).status).to.equal('no_recipients');
    // GET /config shows who confirmed.
    const listed = await request(app).get('/api/v1/config').set('X-API-Key', org.keys.admin).expect(200);
    const entry = listed.body.data.find((e: { key: string }) => e.key === 'alerts.email');
    expect(entry.recipients.map((r: { email: string; confirmed: boolean }) => [r.email, r.confirmed])).to.deep.equal([
      ['ops@example.com', false],
      ['second@example.com', false],
    ]);
    expect(entry.recipients[0].confirmationSentAt).to.be.a('string');
    // One only: another run sends no second request.
    await runJob();
    expect(sink.received).to.have.length(2);

    // Opening the link shows a confirm button and changes nothing; an unknown token is the not-found page.
    const opsMail = sink.received.find((m) => m.to[0] === 'ops@example.com')!;
    const page = await request(app).get(`/alerts/confirm/${tokenOf(opsMail)}`).expect(200);
    expect(page.text).to.include('<form method="post">').and.include('ops@example.com');
    await request(app).post(`/alerts/confirm/${'x'.repeat(32)}`).expect(404);
    expect((await request(app).get('/api/v1/config/alerts.email').set('X-API-Key', org.keys.admin)).body.recipients[0].confirmed).to.equal(false);
    // Confirming: only that address receives the next alert.
    await request(app).post(`/alerts/confirm/${tokenOf(opsMail)}`).expect(200);
    sink.received.splice(0);
    const next = await raisePoolAlert();
    await runJob();
    expect(sink.received.map((m) => m.to)).to.deep.equal([['ops@example.com']]);
    expect((await rowOf(next)).recipients).to.equal('ops@example.com');
    expect(confirmationsIn(sink.received), 'no confirmation request again').to.have.length(0);
    sink.received.splice(0);
    // Out of the hourly window, so the limit test below counts from zero.
    await testDb().update(alertEmails).set({ sentAt: new Date(Date.now() - 2 * 3600_000) }).where(eq(alertEmails.eventId, next));
  });

  it('an alert event is mailed by the alert-email job to every confirmed address', async () => {
    // second@ confirms now (its link went out in the test above, and is not sent again).
    await testDb().update(alertRecipients).set({ confirmedAt: new Date() }).where(eq(alertRecipients.email, 'second@example.com'));
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
    expect(await confirmAllNew()).to.deep.equal(['other@example.com']);
    await request(app).put('/api/v1/config/address_pool.low_threshold.evm').set('X-API-Key', other.keys.admin).send({ value: 100 }).expect(200);
    const outcome = await checkPoolLevel(testDb(), other.organizationId, 'evm', new Date());
    await runJob();
    expect(sink.received.map((m) => m.to)).to.deep.include(['other@example.com']);
    expect((await rowOf(outcome.eventId!)).status).to.equal('sent');
  });

  it('confirmation e-mails are limited per address across organizations and per organization, a day', async () => {
    const before = sink.received.length;
    // Four organizations list the same address: it gets three requests today, the fourth waits.
    const orgs = await Promise.all([1, 2, 3, 4].map((i) => createTestOrg(`Popular ${i}`)));
    for (const o of orgs) await put('popular@example.com', o.keys.admin).expect(200);
    await runJob();
    await runJob();
    expect(sink.received.slice(before).filter((m) => m.to[0] === 'popular@example.com')).to.have.length(3);
    const unsent = await testDb().select().from(alertRecipients).where(and(eq(alertRecipients.email, 'popular@example.com'), isNull(alertRecipients.confirmationSentAt)));
    expect(unsent).to.have.length(1);
    // One organization cycling through addresses: 20 requests a day, then none.
    const cycler = await createTestOrg('Cycling org');
    const batch = (n: number) => Array.from({ length: 10 }, (_, i) => `cycle${n}-${i}@example.com`).join(',');
    const mark = sink.received.length;
    for (const n of [1, 2, 3]) {
      await put(batch(n), cycler.keys.admin).expect(200);
      await runJob();
    }
    const toCycler = sink.received.slice(mark).filter((m) => m.to[0].startsWith('cycle'));
    expect(toCycler).to.have.length(20);
    expect(toCycler.some((m) => m.to[0].startsWith('cycle3-'))).to.equal(false);
    sink.received.splice(before);
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
