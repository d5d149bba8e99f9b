import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { listenToChannel, type ChannelListener } from '../../core/platform/listener';
import { TEST_DATABASE_URL, testDb, testLogger } from '../helpers/harness';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { eventually } from '../helpers/wait';

/**
 * The LISTEN helper (core/platform/listener.ts) under the webhook fast path and the payment
 * pages' memory: it hears its channel, proves its connection with pings of its own, goes deaf
 * when a ping is not heard in time (a black-holed connection never closes by itself) or the
 * connection closed, and hears again on a new connection.
 */
describe('LISTEN helper: one reconnect policy and a liveness check', function () {
  this.timeout(60_000);
  const CHANNEL = 'stablegate_listener_test';
  const DEADLINE_MS = 600;
  let proxy: TcpProxy;
  const open: ChannelListener[] = [];

  beforeEach(async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(TEST_DATABASE_URL).port || 5432) });
  });
  afterEach(async () => {
    for (const l of open.splice(0)) await l.close();
    await proxy.close();
  });

  async function listen() {
    const heard: string[] = [];
    const events: string[] = [];
    const listener = await listenToChannel(
      { databaseUrl: proxy.urlFor(TEST_DATABASE_URL), db: testDb(), channel: CHANNEL, logger: testLogger(), deadlineMs: DEADLINE_MS },
      { onNotify: (payload) => heard.push(payload), onHearing: () => events.push('hearing'), onDeaf: () => events.push('deaf') },
    );
    open.push(listener);
    return { listener, heard, events };
  }
  const notify = (payload: string) => testDb().execute(sql`select pg_notify(${CHANNEL}, ${payload})`);

  it('hears from the start, passes on its channel\'s notifications and never its pings', async () => {
    const { listener, heard, events } = await listen();
    expect(listener.hearing).to.equal(true);
    expect(events).to.deep.equal(['hearing']);
    await notify('one');
    await notify('two');
    await eventually(() => heard.length === 2, 5000, 'two notifications');
    // Several deadlines of pings later: still hearing, and no ping was passed on.
    await new Promise((r) => setTimeout(r, DEADLINE_MS * 3));
    expect(heard).to.deep.equal(['one', 'two']);
    expect(listener.hearing).to.equal(true);
    expect(events).to.deep.equal(['hearing']);
  });

  it('goes deaf within the deadline when its connection is black-holed, and hears again on a new connection once Postgres is reachable', async () => {
    const { listener, heard, events } = await listen();
    proxy.blackHole();
    const holedAt = Date.now();
    await eventually(() => !listener.hearing, DEADLINE_MS * 2, 'deaf');
    expect(Date.now() - holedAt).to.be.at.most(DEADLINE_MS + 200);
    await eventually(() => events.includes('deaf'), DEADLINE_MS * 2, 'told deaf');
    await notify('unheard');
    // Its attempts to connect again meanwhile go into the hole too.
    await new Promise((r) => setTimeout(r, DEADLINE_MS * 2));
    expect(listener.hearing).to.equal(false);

    proxy.restore();
    await eventually(() => listener.hearing, 20_000, 'hearing again');
    expect(events).to.deep.equal(['hearing', 'deaf', 'hearing']);
    await notify('heard');
    await eventually(() => heard.includes('heard'), 5000, 'a notification on the new connection');
    expect(heard).to.not.include('unheard');
  });

  it('goes deaf when its connection is closed and hears again once postgres.js listened again and a ping came back', async () => {
    const { listener, heard, events } = await listen();
    await testDb().execute(
      sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query = ${`listen "${CHANNEL}"`} and pid <> pg_backend_pid()`,
    );
    await eventually(() => events.length === 3, 10_000, 'deaf, then hearing');
    expect(events).to.deep.equal(['hearing', 'deaf', 'hearing']);
    expect(listener.hearing).to.equal(true);
    await notify('after');
    await eventually(() => heard.includes('after'), 5000, 'a notification after the reconnect');
  });

  it('stops at close: no notification passed on, not hearing', async () => {
    const { listener, heard } = await listen();
    await listener.close();
    open.splice(0);
    await notify('late');
    await new Promise((r) => setTimeout(r, 200));
    expect(heard).to.deep.equal([]);
    expect(listener.hearing).to.equal(false);
  });
});
