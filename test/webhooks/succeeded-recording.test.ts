import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import pLimit, { type LimitFunction } from 'p-limit';
import request from 'supertest';
import { deliverWebhooks } from '../../core/webhooks/delivery';
import { succeededRecorder } from '../../core/webhooks/succeeded-recorder';
import { capturedLogLines, buildTestApp, createTestOrg, testConfig, testContext, testSql, type TestOrg } from '../helpers/harness';
import { FAST_WEBHOOK_ENV } from '../helpers/webhooks';

/** A recorder over spies: what it recorded together, one by one, and the fall-backs it reported. */
function spiedRecorder(inFlight: number, opts: { together?: (items: string[]) => Promise<void>; one?: (item: string) => Promise<void>; waitMs?: number } = {}) {
  const together: string[][] = [];
  const ones: string[] = [];
  const fallBacks: number[] = [];
  const recorder = succeededRecorder<string>({
    inFlight,
    waitMs: opts.waitMs ?? 10_000,
    recordTogether: async (items) => {
      together.push(items);
      await opts.together?.(items);
    },
    recordOne: async (item) => {
      ones.push(item);
      await opts.one?.(item);
    },
    onFallBack: (count) => fallBacks.push(count),
  });
  return { recorder, together, ones, fallBacks };
}

/** How a settled promise ended. */
const outcome = (p: Promise<void>) => p.then(() => 'recorded', (err: Error) => `failed: ${err.message}`);

describe('recording succeeded webhook attempts together', () => {
  it('records the succeeded attempts of a batch in one go once no other send of it is in flight', async () => {
    const { recorder, together, ones } = spiedRecorder(3);
    const a = recorder.succeeded('a');
    const b = recorder.succeeded('b');
    expect(together).to.deep.equal([]); // one send still in flight: wait for it
    recorder.otherEnded();
    expect(await Promise.all([outcome(a), outcome(b)])).to.deep.equal(['recorded', 'recorded']);
    expect(together).to.deep.equal([['a', 'b']]);
    expect(ones).to.deep.equal([]);
  });

  it('records what has waited waitMs without the sends still in flight, and the rest when they end', async () => {
    const { recorder, together } = spiedRecorder(2, { waitMs: 20 });
    expect(await outcome(recorder.succeeded('a'))).to.equal('recorded'); // the other send never ends by itself
    expect(together).to.deep.equal([['a']]);
    expect(await outcome(recorder.succeeded('b'))).to.equal('recorded');
    expect(together).to.deep.equal([['a'], ['b']]);
  });

  it('falls back to one by one when recording together fails, each attempt settling with its own outcome', async () => {
    const { recorder, together, ones, fallBacks } = spiedRecorder(3, {
      together: async () => {
        throw new Error('conflict');
      },
      one: async (item) => {
        if (item === 'b') throw new Error('b could not be recorded');
      },
    });
    const settled = [recorder.succeeded('a'), recorder.succeeded('b'), recorder.succeeded('c')].map(outcome);
    expect(await Promise.all(settled)).to.deep.equal(['recorded', 'failed: b could not be recorded', 'recorded']);
    expect(together).to.deep.equal([['a', 'b', 'c']]);
    expect(ones).to.deep.equal(['a', 'b', 'c']);
    expect(fallBacks).to.deep.equal([3]);
  });
});

describe('webhook deliveries and the process memory', () => {
  const { app } = buildTestApp({ style: 'b', env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  const BATCH = 3;
  // Answers 200 to each group of BATCH requests at once, when the group's last one arrives: the
  // batch's sends end together, so none waits alone past the recorder's short wait.
  let held: http.ServerResponse[] = [];
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push(res);
      if (held.length < BATCH) return;
      for (const r of held) r.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      held = [];
    });
  });
  let url: string;
  let org: TestOrg;
  before(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    org = await createTestOrg('Recording org');
  });
  after(async () => {
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  /** Fresh deliveries (one test event to each of `count` new endpoints), their attempt 1. */
  async function freshAttempts(count: number): Promise<{ deliveryId: string; attempt: number }[]> {
    const out: { deliveryId: string; attempt: number }[] = [];
    for (let i = 0; i < count; i++) {
      const ep = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${url}/batch`, events: ['order.completed'] });
      const test = await request(app).post(`/api/v1/webhooks/endpoints/${ep.body.id}/test`).set('X-API-Key', org.keys.admin);
      out.push({ deliveryId: test.body.deliveries[0].id, attempt: 1 });
    }
    return out;
  }

  /** A limiter of one that counts the work it is given; `failCall` n rejects the nth work instead of running it. */
  function countingLimit(failCall?: number): { limit: LimitFunction; calls: () => number } {
    const inner = pLimit(1);
    let calls = 0;
    const limit = (<T>(work: () => Promise<T>) => {
      calls++;
      if (calls === failCall) return Promise.reject(new Error('injected: the batch statement failed'));
      return inner(work);
    }) as unknown as LimitFunction;
    return { limit, calls: () => calls };
  }

  async function states(ids: string[]) {
    const rows = await testSql()`select d.status, (select count(*)::int from webhook_attempts a where a.delivery_id = d.id and a.outcome = 'succeeded') as succeeded
      from webhook_deliveries d where d.id = any(${ids}) order by d.id`;
    return rows.map((r) => [r.status, r.succeeded]);
  }

  it('a batch of succeeded attempts takes two database works: one claim for all, one record for all', async () => {
    const attempts = await freshAttempts(BATCH);
    const ctx = testContext(testConfig(FAST_WEBHOOK_ENV));
    const counted = countingLimit();
    const results = await deliverWebhooks({ ...ctx, memory: { ...ctx.memory, webhookDatabaseWork: counted.limit } }, attempts);
    expect(results.map((r) => r.outcome)).to.deep.equal(['succeeded', 'succeeded', 'succeeded']);
    expect(counted.calls()).to.equal(2);
    expect(await states(attempts.map((a) => a.deliveryId))).to.deep.equal([['succeeded', 1], ['succeeded', 1], ['succeeded', 1]]);
  });

  it('when recording them together fails, each is recorded on its own and the fall-back is logged', async () => {
    const attempts = await freshAttempts(BATCH);
    const ctx = testContext(testConfig(FAST_WEBHOOK_ENV));
    const counted = countingLimit(2); // the claim is work 1; work 2 records the batch
    const linesBefore = capturedLogLines.length;
    const results = await deliverWebhooks({ ...ctx, memory: { ...ctx.memory, webhookDatabaseWork: counted.limit } }, attempts);
    expect(results.map((r) => r.outcome)).to.deep.equal(['succeeded', 'succeeded', 'succeeded']);
    expect(counted.calls()).to.equal(2 + 3);
    expect(await states(attempts.map((a) => a.deliveryId))).to.deep.equal([['succeeded', 1], ['succeeded', 1], ['succeeded', 1]]);
    const fallBack = capturedLogLines.slice(linesBefore).filter((l) => l.includes('recording them one by one'));
    expect(fallBack).to.have.length(1);
    expect(JSON.parse(fallBack[0])).to.include({ count: 3 });
  });
});
