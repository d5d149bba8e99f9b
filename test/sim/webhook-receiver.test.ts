import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { Rng } from './rng';
import { startChaosReceiver, type ChaosReceiver } from './webhook-receiver';

const ROOT = path.resolve(__dirname, '../..');
const TIMEOUT_MS = 300;

/**
 * The service's real sender (core/webhooks/sender.ts) in a process of its own, as in the
 * simulation: it POSTs when told and reports what it got (status or timeout).
 */
const SENDER = `
const { sendWebhook } = require('./core/webhooks/sender');
process.on('message', async (m) => {
  const outcome = await sendWebhook({ url: m.url, body: Buffer.from(JSON.stringify({ id: m.eventId, type: 'order.completed' })),
    headers: { 'Content-Type': 'application/json', 'X-Service-Event-Id': m.eventId }, timeoutMs: ${TIMEOUT_MS}, allowInsecure: true });
  process.send({ eventId: m.eventId, statusCode: outcome.statusCode, failure: outcome.failure && outcome.failure.kind });
});
process.send('ready');
`;

/**
 * Issue 39: the receiver shares the simulation's event loop with tron-local and solana-local. A
 * POST it processes only after the service's timeout is still recorded with the answer drawn for
 * it — a 410 the service never read (it recorded a timeout and closed the connection). The
 * invariant "answered 410 but is still enabled" must not count such a 410: the receiver marks it
 * `unread`, and only it.
 */
describe('the simulation webhook receiver marks answers the service never read', function () {
  this.timeout(30_000);
  let receiver: ChaosReceiver;
  let sender: ChildProcess;
  const replies: { eventId: string; statusCode: number | null; failure: string | null }[] = [];

  before(async () => {
    receiver = await startChaosReceiver(new Rng(39), { timeoutMs: TIMEOUT_MS, failRate: 0, timeoutRate: 0, goneRate: 1 });
    receiver.allowGone('/gone');
    sender = fork('-e', [SENDER], { cwd: ROOT, execArgv: ['--require', 'tsx/cjs'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    sender.on('message', (m) => m !== 'ready' && replies.push(m as (typeof replies)[number]));
    await new Promise<void>((resolve) => sender.on('message', (m) => m === 'ready' && resolve()));
  });
  after(async () => {
    sender?.kill();
    await receiver?.close();
  });

  const replyOf = async (eventId: string) => {
    for (let i = 0; i < 200 && !replies.some((r) => r.eventId === eventId); i++) await new Promise((r) => setTimeout(r, 25));
    return replies.find((r) => r.eventId === eventId);
  };
  const postOf = (eventId: string) => receiver.posts.find((p) => p.eventId === eventId);

  it('a 410 the service read in time is not unread', async () => {
    sender.send({ url: `${receiver.url}/gone`, eventId: 'evt_read' });
    expect(await replyOf('evt_read')).to.deep.include({ statusCode: 410, failure: null });
    // Longer than UNREAD_WITHIN_MS: the sender keeps the connection for its next POST.
    await new Promise((r) => setTimeout(r, 1_300));
    expect(postOf('evt_read')).to.deep.include({ answer: 'gone' });
    expect(postOf('evt_read')?.unread).to.not.equal(true);
  });

  it('a 410 drawn for a POST processed after the service timed out is recorded, and marked unread', async () => {
    sender.send({ url: `${receiver.url}/gone`, eventId: 'evt_late' });
    // This event loop stalls at once (as when tron-local or solana-local hold it) past the sender's
    // timeout: the POST arrives meanwhile and waits in the socket.
    const until = Date.now() + TIMEOUT_MS + 700;
    while (Date.now() < until) {
      // busy: nothing of this process runs, the POST waits in the socket
    }
    expect(await replyOf('evt_late')).to.deep.include({ statusCode: null, failure: 'timeout' });
    await new Promise((r) => setTimeout(r, 100));
    expect(postOf('evt_late')).to.deep.include({ answer: 'gone', unread: true });
  });

  it('after the stall, the next 410 is read again and not unread', async () => {
    sender.send({ url: `${receiver.url}/gone`, eventId: 'evt_after' });
    expect(await replyOf('evt_after')).to.deep.include({ statusCode: 410, failure: null });
    await new Promise((r) => setTimeout(r, 1_300));
    expect(postOf('evt_after')?.unread).to.not.equal(true);
  });
});
