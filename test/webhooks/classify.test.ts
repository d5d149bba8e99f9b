import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { classifyAttempt, MAX_RETRY_AFTER_MS, type AttemptPosition, type Classification, type RetryPolicy } from '../../core/webhooks/classify';
import { RESPONSE_EXCERPT_BYTES, sendWebhook, type SendFailure, type SendOutcome } from '../../core/webhooks/sender';
import { freePort, startReceiver } from '../helpers/webhooks';

const SECOND = 1000;
const HOUR = 3600 * SECOND;
// The default schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
const policy: RetryPolicy = {
  retryScheduleMs: [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400].map((s) => s * SECOND),
  retryJitter: 0,
  disableAfterMs: 72 * HOUR,
};
const T0 = new Date('2026-01-01T00:00:00.000Z');
/** The second attempt of a delivery never restarted by hand, on an endpoint failing for an hour. */
const second: AttemptPosition = { attempt: 2, retryBase: 0, failingSince: new Date(T0.getTime() - HOUR), startedAt: T0, now: new Date(T0.getTime() + 120) };

function answered(statusCode: number, extra: Partial<SendOutcome> = {}): SendOutcome {
  return { statusCode, durationMs: 120, failure: null, responseExcerpt: '{}', responseTruncated: false, retryAfterMs: null, ...extra };
}
function noAnswer(failure: SendFailure): SendOutcome {
  return { statusCode: null, durationMs: 120, failure, responseExcerpt: null, responseTruncated: false, retryAfterMs: null };
}
const retryIn = (delayMs: number, error: string): Classification => ({ outcome: 'failed', error, next: { state: 'retry', delayMs } });
const SCHEDULED = 300 * SECOND; // the delay before the third attempt

describe('webhook attempt classification (pure: answer or error → next state)', () => {
  const table: [string, SendOutcome, Classification][] = [
    ['200', answered(200), { outcome: 'succeeded', error: null, next: { state: 'succeeded' } }],
    ['204 with no body', answered(204, { responseExcerpt: '' }), { outcome: 'succeeded', error: null, next: { state: 'succeeded' } }],
    ['299', answered(299), { outcome: 'succeeded', error: null, next: { state: 'succeeded' } }],
    ['301 (never followed)', answered(301), retryIn(SCHEDULED, 'redirect (301) not followed')],
    ['302 (never followed)', answered(302), retryIn(SCHEDULED, 'redirect (302) not followed')],
    ['410 Gone', answered(410), { outcome: 'failed', error: 'HTTP 410', next: { state: 'endpoint-disabled', reason: 'Receiver answered 410 Gone' } }],
    ['429 without Retry-After', answered(429), retryIn(SCHEDULED, 'HTTP 429')],
    ['429 with a longer Retry-After', answered(429, { retryAfterMs: 900 * SECOND }), retryIn(900 * SECOND, 'HTTP 429')],
    ['429 with a shorter Retry-After (the schedule wins)', answered(429, { retryAfterMs: 10 * SECOND }), retryIn(SCHEDULED, 'HTTP 429')],
    ['429 with Retry-After beyond a day (capped)', answered(429, { retryAfterMs: 30 * 24 * HOUR }), retryIn(MAX_RETRY_AFTER_MS, 'HTTP 429')],
    ['503 with Retry-After', answered(503, { retryAfterMs: 3600 * SECOND }), retryIn(3600 * SECOND, 'HTTP 503')],
    ['503 without Retry-After', answered(503), retryIn(SCHEDULED, 'HTTP 503')],
    ['400', answered(400), retryIn(SCHEDULED, 'HTTP 400')],
    ['401', answered(401), retryIn(SCHEDULED, 'HTTP 401')],
    ['404', answered(404), retryIn(SCHEDULED, 'HTTP 404')],
    ['500', answered(500), retryIn(SCHEDULED, 'HTTP 500')],
    ['502', answered(502), retryIn(SCHEDULED, 'HTTP 502')],
    ['timeout', noAnswer({ kind: 'timeout', message: 'timed out after 15000 ms' }), retryIn(SCHEDULED, 'timed out after 15000 ms')],
    ['DNS failure', noAnswer({ kind: 'dns', message: 'getaddrinfo ENOTFOUND hooks.example' }), retryIn(SCHEDULED, 'DNS lookup failed: getaddrinfo ENOTFOUND hooks.example')],
    ['TLS error', noAnswer({ kind: 'tls', message: 'certificate has expired' }), retryIn(SCHEDULED, 'TLS error: certificate has expired')],
    ['connection refused', noAnswer({ kind: 'refused', message: 'connect ECONNREFUSED 203.0.113.7:443' }), retryIn(SCHEDULED, 'connection refused: connect ECONNREFUSED 203.0.113.7:443')],
    ['connection reset', noAnswer({ kind: 'network', message: 'socket hang up' }), retryIn(SCHEDULED, 'network error: socket hang up')],
    ['address refused by the URL guard', noAnswer({ kind: 'blocked', message: 'h resolves to 10.0.0.1, a private address' }), retryIn(SCHEDULED, 'h resolves to 10.0.0.1, a private address')],
    [
      'oversized 200 (only the excerpt read)',
      answered(200, { responseExcerpt: 'x'.repeat(RESPONSE_EXCERPT_BYTES), responseTruncated: true }),
      { outcome: 'succeeded', error: null, next: { state: 'succeeded' } },
    ],
    ['oversized 500', answered(500, { responseExcerpt: 'x'.repeat(RESPONSE_EXCERPT_BYTES), responseTruncated: true }), retryIn(SCHEDULED, 'HTTP 500')],
  ];

  for (const [name, sent, expected] of table) {
    it(name, () => {
      expect(classifyAttempt(sent, second, policy)).to.deep.equal(expected);
    });
  }

  it('follows the schedule by attempt number, from where a redelivery restarted it', () => {
    const delays = [1, 2, 3, 9].map((attempt) => classifyAttempt(answered(500), { ...second, attempt }, policy).next);
    expect(delays).to.deep.equal([5, 300, 1800, 86400].map((s) => ({ state: 'retry', delayMs: s * SECOND })));
    // Redelivered by hand after 10 attempts: attempt 11 is the first of a fresh schedule.
    expect(classifyAttempt(answered(500), { ...second, attempt: 11, retryBase: 10 }, policy).next).to.deep.equal({ state: 'retry', delayMs: 5 * SECOND });
  });

  it('fails the delivery once the schedule is used up (Retry-After does not extend it)', () => {
    expect(classifyAttempt(answered(500), { ...second, attempt: 10 }, policy)).to.deep.equal({ outcome: 'failed', error: 'HTTP 500', next: { state: 'failed' } });
    expect(classifyAttempt(answered(429, { retryAfterMs: 60 * SECOND }), { ...second, attempt: 10 }, policy).next).to.deep.equal({ state: 'failed' });
    expect(classifyAttempt(answered(200), { ...second, attempt: 10 }, policy).next).to.deep.equal({ state: 'succeeded' });
  });

  it('disables an endpoint failing continuously for disableAfterMs, whatever the failure; a success never disables', () => {
    const longFailing: AttemptPosition = { ...second, failingSince: new Date(T0.getTime() - 72 * HOUR) };
    for (const sent of [answered(500), answered(429, { retryAfterMs: 1000 }), noAnswer({ kind: 'timeout', message: 'timed out after 15000 ms' })]) {
      expect(classifyAttempt(sent, longFailing, policy).next).to.deep.equal({ state: 'endpoint-disabled', reason: 'Failing continuously since 2025-12-29T00:00:00.000Z' });
    }
    expect(classifyAttempt(answered(200), longFailing, policy).next).to.deep.equal({ state: 'succeeded' });
    // Just under the limit: retried.
    const almost: AttemptPosition = { ...second, failingSince: new Date(second.now.getTime() - 72 * HOUR + 1) };
    expect(classifyAttempt(answered(500), almost, policy).next.state).to.equal('retry');
    // A first failure counts from this attempt's start.
    expect(classifyAttempt(answered(500), { ...second, failingSince: null }, policy).next.state).to.equal('retry');
  });

  it('applies ± jitter to scheduled delays only', () => {
    const jittery = { ...policy, retryJitter: 0.1 };
    expect(classifyAttempt(answered(500), second, jittery, () => 1).next).to.deep.equal({ state: 'retry', delayMs: 330 * SECOND });
    expect(classifyAttempt(answered(500), second, jittery, () => 0).next).to.deep.equal({ state: 'retry', delayMs: 270 * SECOND });
    expect(classifyAttempt(answered(503, { retryAfterMs: 3600 * SECOND }), second, jittery, () => 1).next).to.deep.equal({ state: 'retry', delayMs: 3600 * SECOND });
  });
});

describe('webhook send + classify against real failures', function () {
  this.timeout(20_000);
  const body = Buffer.from('{"id":"evt_x"}');
  const send = (url: string, timeoutMs = 2000) => sendWebhook({ url, body, headers: { 'Content-Type': 'application/json' }, timeoutMs, allowInsecure: true });
  const classify = (sent: SendOutcome) => classifyAttempt(sent, second, policy);

  it('connection refused', async () => {
    const sent = await send(`http://127.0.0.1:${await freePort()}/`);
    expect(sent.failure?.kind).to.equal('refused');
    expect(classify(sent).error).to.match(/^connection refused: .*ECONNREFUSED/);
    expect(classify(sent).next.state).to.equal('retry');
  });

  it('DNS failure', async () => {
    const sent = await send('http://no-such-host.invalid/hook');
    expect(sent.failure?.kind).to.equal('dns');
    expect(classify(sent).error).to.match(/^DNS lookup failed: .*no-such-host\.invalid/);
  });

  it('TLS error (https to a server that does not speak TLS)', async () => {
    const receiver = await startReceiver();
    try {
      const sent = await send(`https://127.0.0.1:${receiver.port}/`);
      expect(sent.failure?.kind, sent.failure?.message).to.equal('tls');
      expect(classify(sent).error).to.match(/^TLS error: /);
      expect(classify(sent).next.state).to.equal('retry');
    } finally {
      await receiver.close();
    }
  });

  it('timeout', async () => {
    const receiver = await startReceiver(() => 'hang');
    try {
      const sent = await send(`${receiver.url}/slow`, 300);
      expect(sent.failure).to.deep.equal({ kind: 'timeout', message: 'timed out after 300 ms' });
      expect(classify(sent)).to.deep.equal(retryIn(SCHEDULED, 'timed out after 300 ms'));
    } finally {
      await receiver.close();
    }
  });

  it('an oversized answer: read up to the excerpt, status decides', async () => {
    // 8 MB: the sender must stop reading long before the end.
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('y'.repeat(8 * 1024 * 1024));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const sent = await send(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      expect(sent).to.include({ statusCode: 200, failure: null, responseTruncated: true });
      expect(sent.responseExcerpt).to.equal('y'.repeat(RESPONSE_EXCERPT_BYTES));
      expect(classify(sent).next).to.deep.equal({ state: 'succeeded' });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('Retry-After of a 503 reaches the classification', async () => {
    const receiver = await startReceiver(() => ({ status: 503, headers: { 'Retry-After': '7200' } }));
    try {
      const sent = await send(`${receiver.url}/busy`);
      expect(sent.retryAfterMs).to.equal(7200 * SECOND);
      expect(classify(sent)).to.deep.equal(retryIn(7200 * SECOND, 'HTTP 503'));
    } finally {
      await receiver.close();
    }
  });
});

/**
 * Found by the fault run (issue 32): a worker frozen (SIGSTOP) past its lease recorded its resumed
 * attempt as "timed out after 15000 ms" although the receiver had answered in 5 s: on resume the
 * overdue timer ran before the buffered answer was read. Here the event loop is blocked as a pause
 * would (the receiver is another process, so it answers meanwhile).
 */
describe('a webhook attempt that spans a pause of the sending process', function () {
  this.timeout(30_000);
  let receiver: ChildProcess;
  let port: number;
  const body = Buffer.from('{"id":"evt_paused"}');
  /**
   * Blocks this process's event loop as SIGSTOP pauses a busy one: in a check-phase callback, so
   * the loop's next turn starts with its timers (the overdue timeout) before it reads sockets.
   */
  const pause = (ms: number) => new Promise<void>((resolve) => setImmediate(() => (Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms), resolve())));

  before(async () => {
    // Answers /fast after 100 ms; never answers /hang.
    receiver = spawn(process.execPath, ['-e', `
      const s = require('http').createServer((q, r) => { q.resume(); if (q.url === '/fast') setTimeout(() => r.end('{"ok":true}'), 100); });
      s.listen(0, '127.0.0.1', () => console.log(s.address().port));`], { stdio: ['ignore', 'pipe', 'inherit'] });
    port = await new Promise<number>((resolve) => receiver.stdout!.once('data', (c) => resolve(Number(String(c).trim()))));
  });
  after(() => receiver?.kill());

  it('records the answer that arrived during the pause, not a timeout the receiver never caused', async () => {
    const sending = sendWebhook({ url: `http://127.0.0.1:${port}/fast`, body, headers: {}, timeoutMs: 500, allowInsecure: true });
    await new Promise((r) => setTimeout(r, 50)); // the request is out
    await pause(2000);
    const sent = await sending;
    expect(sent.failure).to.equal(null);
    expect(sent.statusCode).to.equal(200);
    expect(sent.pausedMs).to.be.within(1000, 3000);
    expect(classifyAttempt(sent, second, policy).outcome).to.equal('succeeded');
  });

  it('says the process was paused when no answer came either', async () => {
    const sending = sendWebhook({ url: `http://127.0.0.1:${port}/hang`, body, headers: {}, timeoutMs: 500, allowInsecure: true });
    await new Promise((r) => setTimeout(r, 50));
    await pause(2000);
    const sent = await sending;
    expect(sent.statusCode).to.equal(null);
    expect(sent.failure?.kind).to.equal('timeout');
    expect(classifyAttempt(sent, second, policy).error).to.match(/^no answer within 500 ms; this process was paused for \d+ ms/);
  });

  it('an ordinary timeout still reads "timed out after"', async () => {
    const sent = await sendWebhook({ url: `http://127.0.0.1:${port}/hang`, body, headers: {}, timeoutMs: 300, allowInsecure: true });
    expect(sent.failure?.message).to.equal('timed out after 300 ms');
    expect(sent.pausedMs).to.equal(undefined);
  });
});
