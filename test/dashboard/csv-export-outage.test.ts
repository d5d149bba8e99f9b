import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { createDb } from '../../db/client';
import { EXPORT_BATCH_ROWS } from '../../core/exports/csv-download';
import { buildTestApp, createTestOrg, onTearDown, testDb, TEST_DATABASE_URL, type TestOrg } from '../helpers/harness';
import { createDashboardUser, dashboardClient, sessionCookieOf } from '../helpers/dashboard';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { startTcpProxy } from '../helpers/processes';

/**
 * A CSV export that fails after its answer has started (the database goes away between two of its
 * batches) can no longer be answered with an error: the download is cut, so the client reports a
 * failed download at once instead of hanging or keeping a file that looks whole. The process lives
 * on. Both doors to the one export operation: the dashboard's button and the API's route.
 */
describe('a CSV export when the database goes away mid-download', function () {
  this.timeout(120_000);
  let org: TestOrg;

  before(async () => {
    org = await createTestOrg('CSV outage Co');
    // Several batches, so the download is still reading when the database goes.
    await testDb().execute(sql`
      insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol, address,
        pool_address_id, status, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at, created_at, updated_at)
      select 'ord_co' || lpad(i::text, 24, '0'), ${org.organizationId}, 'outage-' || i, 'tokco' || md5(i::text), 1000000, 0,
        'USDT', ${CHAIN}, 'evm', '0x' || substr(md5(i::text), 1, 40), i, 'pending', 30, 5, 3,
        now(), now(), now() - make_interval(secs => i), now()
      from generate_series(1, ${EXPORT_BATCH_ROWS * 5}) as i`);
  });

  /** Starts a download through an app whose database sits behind a proxy, and stops the proxy at its first bytes. */
  async function downloadWhileDatabaseGoes(path: string, headers: (app: ReturnType<typeof buildTestApp>) => Promise<Record<string, string>>): Promise<string> {
    const proxy = await startTcpProxy(Number(new URL(TEST_DATABASE_URL).port || 5432));
    const url = new URL(TEST_DATABASE_URL);
    url.host = new URL(proxy.url).host;
    const handle = createDb(url.toString(), { max: 2 });
    const t = buildTestApp({ db: handle.db, env: tokenEnv() });
    const sent = await headers(t);
    const server = http.createServer(t.app).listen(0, '127.0.0.1');
    onTearDown(async () => {
      server.close();
      await handle.close().catch(() => {});
      await proxy.close();
    });
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    return new Promise<string>((resolve) => {
      const timer = setTimeout(() => resolve('still open after 15 s'), 15_000);
      const req = http.get({ host: '127.0.0.1', port, path, headers: sent }, (res) => {
        expect(res.statusCode).to.equal(200);
        let first = true;
        res.on('data', () => {
          // The answer has started (its header row and first batch): now the database goes away.
          if (first) void proxy.stop();
          first = false;
        });
        res.on('end', () => (clearTimeout(timer), resolve('ended')));
        res.on('aborted', () => (clearTimeout(timer), resolve('cut')));
        res.on('error', () => (clearTimeout(timer), resolve('cut')));
      });
      req.on('error', () => (clearTimeout(timer), resolve('cut')));
    });
  }

  it('the dashboard\'s orders CSV is cut instead of left open', async () => {
    const outcome = await downloadWhileDatabaseGoes('/dashboard/orders.csv', async (t) => {
      const user = await createDashboardUser(org.organizationId, 'viewer', `viewer-${Date.now()}@csv-outage.test`);
      const signIn = await dashboardClient(t.app, t.config.publicBaseUrl).signIn(user.email, user.password);
      const session = sessionCookieOf(signIn);
      expect(session, 'signed in').to.be.a('string');
      return { cookie: `sg_session=${session}` };
    });
    expect(outcome).to.equal('cut');
  });

  it('the API\'s GET /exports/orders.csv is cut instead of left open', async () => {
    const outcome = await downloadWhileDatabaseGoes('/api/v1/exports/orders.csv', async () => ({ 'x-api-key': org.keys.viewer }));
    expect(outcome).to.equal('cut');
  });
});
