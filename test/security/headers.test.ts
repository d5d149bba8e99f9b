import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import chromium from '@sparticuz/chromium';
import { chromium as playwright, type Browser, type Page } from 'playwright-core';
import request from 'supertest';
import express from 'express';
import helmet from 'helmet';
import { ConfigError, loadConfig } from '../../core/platform/config';
import { QUEUE_NAMES } from '../../core/jobs/catalog';
import { buildTestApp, createTestOrg } from '../helpers/harness';
import { eventually } from '../helpers/wait';
import { securityHeaders, staticHeadersOf } from '../../api/security-headers';

const OPERATOR = { OPERATOR_USER: 'ops', OPERATOR_PASSWORD: 'correct horse battery' };

function expectCommonHeaders(res: request.Response): void {
  expect(res.headers['x-content-type-options']).to.equal('nosniff');
  expect(res.headers).to.not.have.property('x-powered-by');
  expect(res.headers['x-frame-options']).to.equal('DENY');
  expect(res.headers['referrer-policy']).to.equal('no-referrer');
  expect(res.headers['content-security-policy']).to.be.a('string');
}

describe('security headers on every answer', () => {
  const { app } = buildTestApp({ env: OPERATOR });

  it('JSON answers (success, error, 404, /health, openapi.json) carry nosniff, no x-powered-by and a policy that loads nothing', async () => {
    const org = await createTestOrg('Headers org');
    const answers = await Promise.all([
      request(app).get('/api/v1/organizations').set('X-API-Key', org.ownerKey),
      request(app).get('/api/v1/orders'),
      request(app).get('/api/v1/no-such-thing').set('X-API-Key', org.ownerKey),
      request(app).get('/health'),
      request(app).get('/api/v1/openapi.json'),
      request(app).get('/admin/queues'),
    ]);
    expect(answers.map((r) => r.status)).to.deep.equal([200, 401, 404, 200, 200, 401]);
    for (const res of answers.slice(0, 5)) {
      expectCommonHeaders(res);
      expect(res.headers['content-security-policy']).to.match(/^default-src 'none';/);
      expect(res.headers['content-security-policy']).to.include("frame-ancestors 'none'");
      expect(res.headers).to.not.have.property('strict-transport-security');
    }
    expectCommonHeaders(answers[5]);
  });

  it('the headers worked out once at start-up are those helmet itself sets on a live answer', async () => {
    for (const https of [false, true]) {
      const answer = (middleware: express.RequestHandler) => {
        const app = express();
        app.disable('x-powered-by');
        app.use(middleware);
        app.get('/', (_req, res) => {
          res.json({});
        });
        return request(app).get('/');
      };
      const strip = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).filter(([k]) => !['date', 'etag', 'content-length'].includes(k)));
      const helmetItself = helmet({
        contentSecurityPolicy: { useDefaults: false, directives: { 'default-src': ["'none'"], 'frame-ancestors': ["'none'"], 'base-uri': ["'none'"], 'form-action': ["'none'"] } },
        strictTransportSecurity: https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
        crossOriginResourcePolicy: { policy: 'same-origin' },
        xFrameOptions: { action: 'deny' },
        referrerPolicy: { policy: 'no-referrer' },
      });
      const [ours, theirs] = await Promise.all([answer(securityHeaders({ https })), answer(helmetItself)]);
      expect(strip(ours.headers)).to.deep.equal(strip(theirs.headers));
      expect(Object.keys(ours.headers)).to.include.members(['x-xss-protection', 'origin-agent-cluster', 'cross-origin-opener-policy', ...(https ? ['strict-transport-security'] : [])]);
    }
  });

  it('a header middleware that reads the request or does not go on at once is refused', () => {
    expect(() => staticHeadersOf((req, _res, next) => (req.path ? next() : next()))).to.throw(/read the request/);
    expect(() => staticHeadersOf((_req, _res, next) => void setImmediate(next))).to.throw(/did not pass the request on/);
  });

  it('HSTS only when PUBLIC_BASE_URL is https', async () => {
    const { app: https } = buildTestApp({ env: { PUBLIC_BASE_URL: 'https://pay.example.com' } });
    const res = await request(https).get('/health');
    expect(res.headers['strict-transport-security']).to.equal('max-age=31536000; includeSubDomains');
  });

  it("the docs page's policy allows only its own scripts and stylesheets (Swagger UI served from our origin), nothing inline", async () => {
    const res = await request(app).get('/api/v1/docs');
    expect(res.status).to.equal(200);
    expectCommonHeaders(res);
    const csp = res.headers['content-security-policy'];
    expect(csp).to.match(/default-src 'none'/);
    expect(csp).to.include("script-src 'self'");
    expect(csp).to.include("style-src 'self'");
    expect(csp).to.not.include('unsafe-inline');
    expect(res.text).to.not.match(/<script>|<style>| style="/);
    const assets = [...res.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]).filter((u) => !u.startsWith('/api/v1/openapi.json'));
    expect(assets.length).to.be.greaterThan(2);
    for (const url of assets) {
      expect(url, 'no third-party asset').to.match(/^\/api\/v1\/docs\/assets\//);
      const asset = await request(app).get(url);
      expect(asset.status, url).to.equal(200);
      expect(asset.headers['content-type']).to.match(/javascript|css/);
    }
    expect((await request(app).get('/api/v1/docs/assets/package.json')).status).to.equal(404);
  });

});

describe('surfaces still work in a browser under their policies', function () {
  this.timeout(60_000);
  const { app } = buildTestApp({ env: OPERATOR });
  let server: http.Server;
  let base: string;
  let browser: Browser;

  before(async () => {
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await playwright.launch({ executablePath: await chromium.executablePath(), args: chromium.args });
  });
  after(async () => {
    await browser?.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** Opens a page and records every CSP violation the browser reports. */
  async function open(url: string, credentials?: { username: string; password: string }): Promise<{ page: Page; violations: string[] }> {
    const context = await browser.newContext(credentials ? { httpCredentials: credentials } : {});
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) violations.push(msg.text());
    });
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => console.error(`Content Security Policy violation: ${e.violatedDirective} ${e.blockedURI}`));
    });
    await page.goto(url);
    return { page, violations };
  }

  it('the browser reports violations (the check below can fail)', async () => {
    const { page, violations } = await open('about:blank');
    await page.route(`${base}/control`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', headers: { 'Content-Security-Policy': "default-src 'none'" }, body: '<style>p{color:red}</style><p>x</p>' }),
    );
    await page.goto(`${base}/control`);
    await eventually(() => /style-src|default-src/.test(violations.join('\n')), 10_000, 'the browser to report the violation');
  });

  it('/api/v1/docs renders every operation in Swagger UI, with "try it", and no violation', async () => {
    const { page, violations } = await open(`${base}/api/v1/docs`);
    const doc = (await request(app).get('/api/v1/openapi.json')).body;
    // Every operation and every webhook event the document declares.
    const operations = [...Object.values(doc.paths as Record<string, object>), ...Object.values(doc.webhooks as Record<string, object>)].reduce((n, ops) => n + Object.keys(ops).length, 0);
    await page.waitForSelector('.opblock', { timeout: 20_000 });
    expect(await page.locator('.opblock').count()).to.equal(operations);
    // The server-rendered reference is the no-JavaScript path; with JavaScript Swagger UI replaces it.
    expect(await page.locator('#plain-reference').isHidden()).to.equal(true);
    await page.locator('.opblock-summary').first().click();
    await page.getByRole('button', { name: 'Try it out' }).first().waitFor({ timeout: 10_000 });
    expect(violations, violations.join("\n")).to.deep.equal([]);
  });


  it('bull-board loads its scripts and lists every queue, with no violation', async () => {
    const { page, violations } = await open(`${base}/admin/queues`, { username: OPERATOR.OPERATOR_USER, password: OPERATOR.OPERATOR_PASSWORD });
    for (const name of QUEUE_NAMES) await page.getByText(name, { exact: true }).first().waitFor({ timeout: 20_000 });
    expect(violations, violations.join("\n")).to.deep.equal([]);
  });
});

describe('PUBLIC_BASE_URL over http outside NETWORK=local', () => {
  const base = { SECRET_ENCRYPTION_KEY: 'ab'.repeat(32) };
  it('is refused on testnet and mainnet unless ALLOW_INSECURE_PUBLIC_URL=true', () => {
    for (const network of ['testnet', 'mainnet']) {
      expect(() => loadConfig({ ...base, NETWORK: network, PUBLIC_BASE_URL: 'http://pay.example.com' })).to.throw(ConfigError, /PUBLIC_BASE_URL must be https:\/\/ when NETWORK=/);
      expect(() => loadConfig({ ...base, NETWORK: network })).to.throw(ConfigError, /ALLOW_INSECURE_PUBLIC_URL/);
      expect(loadConfig({ ...base, NETWORK: network, PUBLIC_BASE_URL: 'http://pay.example.com', ALLOW_INSECURE_PUBLIC_URL: 'true' }).publicBaseUrl).to.equal('http://pay.example.com');
      expect(loadConfig({ ...base, NETWORK: network, PUBLIC_BASE_URL: 'https://pay.example.com' }).publicBaseUrl).to.equal('https://pay.example.com');
    }
  });
  it('is fine on NETWORK=local', () => {
    expect(loadConfig({ NETWORK: 'local' }).publicBaseUrl).to.equal('http://localhost:3000');
  });
});
