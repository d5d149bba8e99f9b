import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { artifactPath, launchBrowser } from '../helpers/browser';
import { buildTestApp, createTestOrg, knownSecrets, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { preserveCheckpoint } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { createDashboardUser } from '../helpers/dashboard';

const run = promisify(execFile);

/**
 * The merchant dashboard in headless Chromium against the running service: the API on a real
 * port, a worker process scanning a local anvil chain and delivering webhooks, real Postgres and
 * Redis. Screenshots of each step under test/artifacts/dashboard-*.png.
 */
describe('merchant dashboard in a real browser (Chromium, anvil, worker process)', function () {
  this.timeout(180_000);
  preserveCheckpoint();
  let chain: TestChain;
  let worker: Spawned;
  let browser: Browser;
  let api: http.Server;
  let receiver: http.Server;
  let evil: http.Server;
  let base: string;
  let receiverUrl: string;
  let evilBase: string;
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  let org: TestOrg;
  let owner: { email: string; password: string };
  let viewer: { email: string; password: string };

  const listen = (server: http.Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

  before(async () => {
    chain = await startTestChain();
    api = http.createServer();
    base = `http://127.0.0.1:${await listen(api)}`;
    const testApp = buildTestApp({ env: { PUBLIC_BASE_URL: base, WEBHOOK_ALLOW_INSECURE: 'true', PAGE_RATE_LIMIT_PER_MINUTE: '10000' } });
    useTestChain(testApp.deps.registry, chain);
    api.on('request', testApp.app);

    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
      });
    });
    receiverUrl = `http://127.0.0.1:${await listen(receiver)}/hooks`;
    // Another site (another port: same site, other origin) whose page posts a form to the dashboard.
    evil = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end(
        `<!doctype html><title>Win a prize</title><form method="post" action="${base}/dashboard/settings/api-keys"><input type="hidden" name="name" value="stolen"><input type="hidden" name="role" value="owner"><button id="go">Claim</button></form>`,
      );
    });
    evilBase = `http://127.0.0.1:${await listen(evil)}`;

    org = await createTestOrg('Acme Coffee');
    await seedPoolAddresses(org.organizationId, 'evm', 6);
    owner = await createDashboardUser(org.organizationId, 'owner', 'owner@acme-coffee.test');
    viewer = await createDashboardUser(org.organizationId, 'viewer', 'viewer@acme-coffee.test');
    await resetCheckpointToHead(testApp.deps, chain);
    worker = spawnEntry('workers/main.ts', {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: TEST_REDIS_PREFIX,
      NETWORK: 'local',
      LOG_LEVEL: 'info',
      WEBHOOK_ALLOW_INSECURE: 'true',
      WORKER_QUEUES: 'chain-scan,chain-confirmations,order-expiry,webhook-relay,webhook-delivery',
      CHAIN_SCAN_INTERVAL_MS: '150',
      CONFIRMATIONS_INTERVAL_MS: '150',
      WEBHOOK_RELAY_INTERVAL_MS: '200',
      RPC_URLS_ETHEREUM_LOCAL: chain.url,
      TOKEN_ETHEREUM_LOCAL_USDT: chain.tokens.USDT,
      TOKEN_ETHEREUM_LOCAL_USDC: chain.tokens.USDC,
      TOKEN_ETHEREUM_LOCAL_DAI: chain.tokens.DAI,
    });
    [browser] = await Promise.all([launchBrowser(), worker.waitFor(/workers started/, 90_000)]);
  });

  after(async () => {
    await browser?.close();
    if (worker) {
      worker.child.kill('SIGTERM');
      await Promise.race([worker.exited, new Promise((r) => setTimeout(r, 5000))]);
      worker.killGroup();
    }
    for (const s of [api, receiver, evil]) await new Promise((r) => s?.close(r));
    await chain?.stop();
  });

  async function signedIn(who: { email: string; password: string }, width = 1280): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard`);
    // Not signed in: sent to the sign-in page, which returns there afterwards.
    expect(new URL(page.url()).pathname).to.equal('/dashboard/sign-in');
    await page.getByLabel('E-mail').fill(who.email);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/dashboard`);
    return { context, page };
  }

  it('signs in with e-mail and password and shows the overview', async () => {
    const { context, page } = await signedIn(owner);
    expect(await page.textContent('h1')).to.equal('Overview');
    expect(await page.textContent('header.top')).to.contain(owner.email).and.contain('owner');
    await page.screenshot({ path: artifactPath('dashboard-1-overview'), fullPage: true });
    // Usable at 320 px: nothing wider than the screen.
    await page.setViewportSize({ width: 320, height: 700 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(320);
    await page.screenshot({ path: artifactPath('dashboard-1-overview-320'), fullPage: true });
    await context.close();
  });

  it('creates an API key in Settings, shown once, that works with curl', async () => {
    const { context, page } = await signedIn(owner);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('Shop server');
    await page.getByLabel('Role').selectOption('member');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.textContent('#new-secret'))!.trim();
    knownSecrets.add(key);
    expect(key).to.match(/^pk_/);
    await page.screenshot({ path: artifactPath('dashboard-2-api-key-created'), fullPage: true });
    const { stdout } = await run('curl', ['-s', '-H', `X-API-Key: ${key}`, `${base}/api/v1/orders?limit=1`]);
    // Style B (the test default) answers a list as { data, pagination }.
    expect(JSON.parse(stdout)).to.have.property('data').that.is.an('array');
    const { stdout: refused } = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-H', 'X-API-Key: pk_not_a_real_key_at_all_000000', `${base}/api/v1/orders`]);
    expect(refused).to.equal('401');
    // Shown once: the list has its prefix only.
    await page.goto(`${base}/dashboard/settings/api-keys`);
    expect(await page.content()).to.contain('Shop server').and.not.contain(key);
    await context.close();
  });

  it('registers a webhook endpoint, shows its secret once, sends a test event and shows the attempt in the log', async () => {
    const { context, page } = await signedIn(owner);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL (HTTPS)').fill(receiverUrl);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = (await page.textContent('#new-secret'))!.trim();
    knownSecrets.add(secret);
    expect(secret).to.match(/^whsec_/);
    await page.screenshot({ path: artifactPath('dashboard-3-webhook-created'), fullPage: true });
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('link', { name: 'See its delivery' }).click();
    const deadline = Date.now() + 30_000;
    while (!(await page.locator('#deliveries .status-code').count()) && Date.now() < deadline) {
      await page.waitForTimeout(300);
      await page.reload();
    }
    expect(await page.textContent('#deliveries .status-code')).to.equal('200');
    expect(await page.textContent('#deliveries')).to.contain('webhook.test').and.contain('succeeded').and.contain('thanks');
    expect(received.some((r) => r.body.includes('webhook.test'))).to.equal(true);
    await page.screenshot({ path: artifactPath('dashboard-4-webhook-delivery-log'), fullPage: true });
    await context.close();
  });

  it('shows an order paid with npm run pay as completed, on the overview and in the list', async () => {
    const created = await request(base).post('/api/v1/orders').set('X-API-Key', org.ownerKey).send({ orderReference: 'dash-1', amount: '7.25', currency: 'USDT', chainId: 'ethereum-local' });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    knownSecrets.add(created.body.data?.paymentUrl?.split('/').at(-1) ?? created.body.paymentUrl.split('/').at(-1));
    const orderId: string = created.body.data?.orderId ?? created.body.orderId;
    await chain.rpc('evm_setAutomine', [true]);
    const payer = spawnEntry('scripts/local-chain/pay.ts', {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      RPC_URLS_ETHEREUM_LOCAL: chain.url,
      TOKEN_ETHEREUM_LOCAL_USDT: chain.tokens.USDT,
      TOKEN_ETHEREUM_LOCAL_USDC: chain.tokens.USDC,
      TOKEN_ETHEREUM_LOCAL_DAI: chain.tokens.DAI,
    }, [orderId, '7.25']);
    expect(await payer.exited, payer.stderr()).to.equal(0);
    await chain.rpc('evm_setAutomine', [false]);
    const { context, page } = await signedIn(owner);
    const deadline = Date.now() + 40_000;
    await page.goto(`${base}/dashboard/orders?status=completed`);
    while (!(await page.locator(`tr[data-order-id="${orderId}"]`).count()) && Date.now() < deadline) {
      await chain.mine(1);
      await page.waitForTimeout(300);
      await page.reload();
    }
    expect(await page.textContent(`tr[data-order-id="${orderId}"] [data-status]`)).to.equal('completed');
    await page.screenshot({ path: artifactPath('dashboard-5-orders-completed'), fullPage: true });
    await page.getByRole('link', { name: orderId }).click();
    expect(await page.textContent('main')).to.contain('7.25 USDT').and.contain('confirmed');
    await page.screenshot({ path: artifactPath('dashboard-6-order-detail'), fullPage: true });
    await page.getByRole('link', { name: 'Overview' }).click();
    expect(await page.getAttribute('#orders-today strong', 'data-count')).to.equal('1');
    expect(await page.textContent('#orders-today')).to.contain('7.25 USDT');
    await page.screenshot({ path: artifactPath('dashboard-7-overview-paid'), fullPage: true });
    await context.close();
  });

  it('imports a CSV with a bad line and shows that line\'s error; nothing is imported', async () => {
    const { context, page } = await signedIn(owner);
    await page.getByRole('link', { name: 'Address pool' }).click();
    const before = await page.textContent('tr[data-protocol="evm"] td:nth-child(2)');
    const form = page.getByRole('region', { name: 'Import addresses (CSV)' });
    await form.getByLabel('Protocol', { exact: true }).selectOption('evm');
    await form.getByLabel('CSV text (header: address,protocol[,derivation_index,master_public_key])').fill(
      ['address,protocol', '0x1111111111111111111111111111111111111111,evm', '0xnot-an-address,evm', '0x2222222222222222222222222222222222222222,evm'].join('\n'),
    );
    await page.getByRole('button', { name: 'Import' }).click();
    const errors = page.locator('#import-errors');
    expect(await errors.textContent(), String(await errors.textContent())).to.contain('0xnot-an-address');
    expect(await page.textContent('#import-errors tbody tr td:first-child')).to.equal('3');
    expect(await page.textContent('tr[data-protocol="evm"] td:nth-child(2)')).to.equal(before);
    await page.screenshot({ path: artifactPath('dashboard-8-import-error'), fullPage: true });
    await context.close();
  });

  it('shows a Viewer no actions, and refuses a direct post from a Viewer\'s session', async () => {
    const { context, page } = await signedIn(viewer);
    for (const path of ['/dashboard', '/dashboard/orders', '/dashboard/settings/webhooks', '/dashboard/settings/members']) {
      await page.goto(`${base}${path}`);
      // Reading (the filter forms are GETs) but no action: no form that posts, but signing out.
      const actions = await page.locator('form[method="post"]:not([action="/dashboard/sign-out"])').count();
      expect(actions, path).to.equal(0);
    }
    await page.screenshot({ path: artifactPath('dashboard-9-viewer-members'), fullPage: true });
    const csrf = await page.getAttribute('input[name="_csrf"]', 'value');
    const res = await page.request.post(`${base}/dashboard/settings/api-keys`, { form: { _csrf: csrf!, name: 'viewer key', role: 'viewer' }, headers: { Origin: base } });
    expect(res.status()).to.equal(403);
    await context.close();
  });

  it('refuses a form another site makes the signed-in browser post', async () => {
    const { context, page } = await signedIn(owner);
    const other = await context.newPage();
    await other.goto(`${evilBase}/`);
    const [response] = await Promise.all([other.waitForResponse(`${base}/dashboard/settings/api-keys`), other.click('#go')]);
    expect(response.status()).to.equal(403);
    await other.screenshot({ path: artifactPath('dashboard-10-cross-site-refused'), fullPage: true });
    await page.goto(`${base}/dashboard/settings/api-keys`);
    expect(await page.content()).not.to.contain('stolen');
    await context.close();
  });

  it('signs out everywhere: another browser\'s session ends', async () => {
    const a = await signedIn(owner);
    const b = await signedIn(owner);
    await a.page.getByRole('link', { name: 'Account' }).click();
    await a.page.screenshot({ path: artifactPath('dashboard-11-account'), fullPage: true });
    await a.page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await a.page.waitForURL(`${base}/dashboard/sign-in`);
    await b.page.goto(`${base}/dashboard/orders`);
    expect(new URL(b.page.url()).pathname).to.equal('/dashboard/sign-in');
    await b.page.screenshot({ path: artifactPath('dashboard-12-signed-out-elsewhere'), fullPage: true });
    await a.context.close();
    await b.context.close();
  });
});
