import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createDb, type DbHandle } from '../../db/client';
import { buildTestApp, createTestOrg, TEST_DATABASE_URL } from '../helpers/harness';
import { createDashboardUser, dashboardClient, sessionCookieOf } from '../helpers/dashboard';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { startTcpProxy, type TcpProxy } from '../helpers/processes';

/**
 * A dashboard page that fails after its answer has started (the orders CSV, written page by page,
 * when the database goes away mid-download) could not be answered with an error page any more, and
 * the page runner left the response open: the download hung for good. It is now cut, so the
 * browser reports a failed download at once.
 */
describe('the orders CSV export when the database goes away mid-download', function () {
  this.timeout(120_000);
  let proxy: TcpProxy;
  let handle: DbHandle;
  let server: http.Server;

  before(async () => {
    proxy = await startTcpProxy(Number(new URL(TEST_DATABASE_URL).port || 5432));
    const url = new URL(TEST_DATABASE_URL);
    url.host = new URL(proxy.url).host;
    handle = createDb(url.toString(), { max: 2 });
  });
  after(async () => {
    server?.close();
    await handle?.close().catch(() => {});
    await proxy?.close();
  });

  it('cuts the download instead of leaving it open', async () => {
    const t = buildTestApp({ db: handle.db, env: tokenEnv() });
    const org = await createTestOrg('CSV outage Co');
    await seedPoolAddresses(org.organizationId, 'evm', 30);
    for (let i = 0; i < 20; i++) {
      const res = await request(t.app)
        .post('/api/v1/orders')
        .set('X-API-Key', org.keys.member)
        .send({ orderReference: `csv-${i}`, amount: '1', currency: 'USDT', chainId: CHAIN });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
    }
    const user = await createDashboardUser(org.organizationId, 'viewer', `viewer-${Date.now()}@csv-outage.test`);
    const signIn = await dashboardClient(t.app, t.config.publicBaseUrl).signIn(user.email, user.password);
    const session = sessionCookieOf(signIn);
    expect(session, 'signed in').to.be.a('string');

    server = http.createServer(t.app).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    const outcome = await new Promise<string>((resolve) => {
      const timer = setTimeout(() => resolve('still open after 15 s'), 15_000);
      const req = http.get({ host: '127.0.0.1', port, path: '/dashboard/orders.csv', headers: { cookie: `sg_session=${session}` } }, (res) => {
        let first = true;
        res.on('data', () => {
          // The answer has started (its header row): now the database goes away.
          if (first) void proxy.stop();
          first = false;
        });
        res.on('end', () => (clearTimeout(timer), resolve('ended')));
        res.on('aborted', () => (clearTimeout(timer), resolve('cut')));
        res.on('error', () => (clearTimeout(timer), resolve('cut')));
      });
      req.on('error', () => (clearTimeout(timer), resolve('cut')));
    });
    expect(outcome).to.equal('cut');
  });
});
