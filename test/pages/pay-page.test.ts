import { expect } from 'chai';
import request from 'supertest';
import { walletUri } from '../../core/chains/wallet-uri';
import { paymentStatusJson, paymentStatusText } from '../../api/pages/pay/pay-status';
import { loadConfig, ConfigError } from '../../core/platform/config';
import { buildTestApp, capturedLogLines, createTestOrg, knownSecrets, STYLES, TEST_REDIS_PREFIX, type TestApp, type TestOrg } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { randomTronAddress, seedPoolAddresses } from '../helpers/pool';
import { eventually } from '../helpers/wait';
import { processMetrics } from '../../core/platform/metrics';
import { setCheckpoint } from '../../core/chains/checkpoints';

/** The payment page over HTTP: routing, headers, the status JSON, limits and languages (the browser suite covers the payer's view). */
describe('payment page over HTTP', () => {
  const tokens = tokenEnv();
  let org: TestOrg;

  before(async () => {
    org = await createTestOrg('Page <Shop> "Ltd"');
    await seedPoolAddresses(org.organizationId, 'evm', 20);
  });

  async function createOrder(t: TestApp, body: Record<string, unknown> = {}) {
    const res = await request(t.app)
      .post('/api/v1/orders')
      .set('X-API-Key', org.ownerKey)
      .send({ orderReference: `page-${Date.now()}-${Math.random()}`, amount: '7.5', currency: 'USDT', chainId: CHAIN, ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const order = t.config.apiStyle === 'a' ? res.body.data : res.body;
    const path = new URL(order.paymentUrl).pathname;
    const token = path.split('/')[2];
    knownSecrets.add(token);
    return { order, path, token };
  }

  for (const style of STYLES) {
    it(`opens from the paymentUrl of a new order in style ${style.toUpperCase()}`, async () => {
      const t = buildTestApp({ style, env: { ...tokens, PUBLIC_BASE_URL: 'https://pay.example.com' } });
      const { order, path, token } = await createOrder(t);
      expect(order.paymentUrl).to.equal(`https://pay.example.com${path}`);
      expect(token).to.match(/^[A-Za-z0-9_-]{22}$/);
      const page = await request(t.app).get(path);
      expect(page.status).to.equal(200);
      expect(page.headers['content-type']).to.match(/^text\/html/);
      // The organization's name is escaped, never markup.
      expect(page.text).to.include('Payment to Page &lt;Shop&gt; &quot;Ltd&quot;');
      expect(page.text).to.include(order.address);
      expect(page.text).to.include('7.5 USDT');
    });
  }

  it("shows the order's reference, escaped, so a payer can tell which order the page is for (issue 40)", async () => {
    const t = buildTestApp({ env: tokens });
    const reference = `inv-<b>"2041"</b>&${Date.now()}`;
    const { path } = await createOrder(t, { orderReference: reference });
    const page = await request(t.app).get(path);
    const escaped = reference.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
    expect(page.text).to.include(`<p class="order-reference">Order: <span class="value" id="order-reference">${escaped}</span></p>`);
    expect(page.text).to.not.include('<b>');
    const es = await request(t.app).get(`${path}?lang=es`);
    expect(es.text).to.include(`Pedido: <span class="value" id="order-reference">${escaped}</span>`);
  });

  it('sends the public pages headers on the page, its status and our assets', async () => {
    const t = buildTestApp({ env: tokens });
    const { path } = await createOrder(t);
    const page = await request(t.app).get(path);
    const asset = page.text.match(/href="(\/static\/pages\.css\?v=\w+)"/)![1];
    const script = page.text.match(/src="(\/static\/pay\.js\?v=\w+)"/)![1];
    for (const res of [page, await request(t.app).get(`${path}/status`), await request(t.app).get(asset), await request(t.app).get(script)]) {
      expect(res.status).to.equal(200);
      const csp = res.headers['content-security-policy'];
      expect(csp).to.include("script-src 'self'");
      expect(csp).to.include("frame-ancestors 'none'");
      expect(csp).to.include("default-src 'none'");
      expect(csp).to.not.include('unsafe-inline');
      expect(res.headers['x-robots-tag']).to.equal('noindex, nofollow');
      expect(res.headers['referrer-policy']).to.equal('no-referrer');
      expect(res.headers['x-frame-options']).to.equal('DENY');
      expect(res.headers['x-content-type-options']).to.equal('nosniff');
    }
    expect(page.headers['cache-control']).to.equal('no-store');
    expect(page.text).to.include('<meta name="robots" content="noindex, nofollow">');
    // No inline script, no third-party asset.
    expect(page.text).to.not.match(/<script>|<script [^>]*>[^<]/);
    expect(page.text).to.not.match(/(src|href)="(https?:)?\/\//);
  });

  it('lets a deployment allow framing by named sites (PAGE_FRAME_ANCESTORS)', async () => {
    const t = buildTestApp({ env: { ...tokens, PAGE_FRAME_ANCESTORS: 'https://shop.example' } });
    const { path } = await createOrder(t);
    const page = await request(t.app).get(path);
    expect(page.headers['content-security-policy']).to.include('frame-ancestors https://shop.example');
    expect(page.headers['x-frame-options']).to.equal(undefined);
  });

  it('answers an unknown, malformed or order-id token with a 404 page (JSON for the status endpoint)', async () => {
    const t = buildTestApp({ env: tokens });
    const { order } = await createOrder(t);
    for (const path of ['/pay/AAAAAAAAAAAAAAAAAAAAAA', `/pay/${order.orderId}`, '/pay/x%27%3Cscript%3E', '/pay', '/pay/a/b/c']) {
      const res = await request(t.app).get(path);
      expect(res.status, path).to.equal(404);
      expect(res.headers['content-type']).to.match(/^text\/html/);
      expect(res.text).to.include('Payment not found');
      expect(res.headers['content-security-policy']).to.include("script-src 'self'");
    }
    const status = await request(t.app).get('/pay/AAAAAAAAAAAAAAAAAAAAAA/status');
    expect(status.status).to.equal(404);
    expect(status.body).to.deep.equal({ error: 'NOT_FOUND', message: 'No payment for this link' });
  });

  it('status: no-store JSON with only what the page shows, and the grace period from the clock', async () => {
    const t = buildTestApp({ env: tokens });
    const { path, order } = await createOrder(t, { amount: '2', graceMinutes: 5, successUrl: 'https://shop.example/ok' });
    const res = await request(t.app).get(`${path}/status`);
    expect(res.status).to.equal(200);
    expect(res.headers['cache-control']).to.equal('no-store');
    expect(Object.keys(res.body).sort()).to.deep.equal(
      ['amount', 'amountReceived', 'chainName', 'confirmations', 'currency', 'detectionDelayed', 'excess', 'expiresAt', 'explorerUrl', 'finality',
        'graceEndsAt', 'redirectUrl', 'remaining', 'serverTime', 'state', 'txHash', 'underReview', 'version', 'priceUsd', 'routes'].sort(),
    );
    expect(res.body).to.include({ state: 'awaiting', amount: '2', amountReceived: '0', remaining: '2', currency: 'USDT', redirectUrl: null });
    expect(JSON.stringify(res.body)).to.not.include(order.orderId);
    expect(Math.abs(Date.parse(res.body.serverTime) - Date.now())).to.be.below(5000);

    // Past expiresAt, before the order is final: grace, the page stops inviting payment. The chain
    // is being scanned (it has a checkpoint): the page promises recognition only then
    // (test/detection/chain-health.test.ts has the chain whose providers never answered).
    await setCheckpoint(t.deps.db, { chainId: CHAIN, blockNumber: 1, blockHash: '0x01', blockTimestamp: new Date() });
    t.clock.advance(10 * 60_000 + 1000);
    const grace = await request(t.app).get(`${path}/status`);
    expect(grace.body.state).to.equal('grace');
    expect(grace.body.version).to.not.equal(res.body.version);
    const page = await request(t.app).get(path);
    expect(page.text).to.include('will still be recognised');
    expect(grace.body.detectionDelayed).to.equal(false);
    expect(page.text).to.not.include('id="qr"');
    expect(page.text).to.not.include(order.address);
  });

  it('speaks Spanish by ?lang=es or Accept-Language, English otherwise', async () => {
    const t = buildTestApp({ env: tokens });
    const { path } = await createOrder(t);
    const byQuery = await request(t.app).get(`${path}?lang=es`);
    expect(byQuery.text).to.include('<html lang="es">').and.include('Esperando su pago');
    expect(byQuery.headers['content-language']).to.equal('es');
    const byHeader = await request(t.app).get(path).set('Accept-Language', 'es-MX,es;q=0.9,en;q=0.5');
    expect(byHeader.text).to.include('Esperando su pago');
    const preferred = await request(t.app).get(`${path}?lang=en`).set('Accept-Language', 'es');
    expect(preferred.text).to.include('<html lang="en">');
    const other = await request(t.app).get(path).set('Accept-Language', 'fr-FR');
    expect(other.text).to.include('Waiting for your payment');
    expect(byHeader.headers.vary).to.include('Accept-Language');
  });

  it('never writes the token in the request log', async () => {
    const t = buildTestApp({ env: tokens });
    const { path, token } = await createOrder(t);
    const mark = capturedLogLines.length;
    await request(t.app).get(path);
    await request(t.app).get(`${path}/status`);
    // Each request's line is written when its response finishes, which may be after the client has it.
    await eventually(() => {
      const lines = capturedLogLines.slice(mark).filter((l) => l.includes('/pay/'));
      return lines.some((l) => l.includes('"/pay/[token]"')) && lines.some((l) => l.includes('"/pay/[token]/status"'));
    }, 5_000, 'the request log lines of the page and its status, with the token masked');
    expect(capturedLogLines.some((l) => l.includes(token))).to.equal(false);
  });

  it('status: answered in front of the router as the router answers it (headers, body, errors, metrics)', async () => {
    const t = buildTestApp({ env: tokens });
    const { path, token } = await createOrder(t);
    // The canonical form is answered before the router; a trailing slash still goes through it.
    const fast = await request(t.app).get(`${path}/status?x=1`).set('X-Request-Id', 'fast-1');
    const routed = await request(t.app).get(`${path}/status/`).set('X-Request-Id', 'routed-1');
    expect(fast.status).to.equal(200);
    expect(routed.status).to.equal(200);
    const comparable = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).filter(([k]) => !['date', 'x-request-id', 'content-length'].includes(k)));
    expect(comparable(fast.headers)).to.deep.equal(comparable(routed.headers));
    expect(fast.headers['x-request-id']).to.equal('fast-1');
    expect({ ...fast.body, serverTime: null }).to.deep.equal({ ...routed.body, serverTime: null });
    const head = await request(t.app).head(`${path}/status`);
    expect(head.status).to.equal(200);
    expect(head.headers['content-security-policy']).to.include("script-src 'self'");
    expect(head.text ?? '').to.equal('');
    // Unknown tokens: the endpoint's JSON 404, either way, with the same headers.
    const unknownFast = await request(t.app).get('/pay/AAAAAAAAAAAAAAAAAAAAAA/status');
    const unknownRouted = await request(t.app).get('/pay/AAAAAAAAAAAAAAAAAAAAAA/status/');
    expect(unknownFast.status).to.equal(404);
    expect(unknownFast.body).to.deep.equal(unknownRouted.body);
    expect(comparable(unknownFast.headers)).to.deep.equal(comparable(unknownRouted.headers));
    // Other methods are the router's: its not-found answer (JSON under /status).
    const post = await request(t.app).post(`${path}/status`);
    expect(post.status).to.equal(404);
    expect(post.body).to.deep.equal({ error: 'NOT_FOUND', message: 'Not found' });
    // Counted under the route's pattern, never the token.
    const metrics = await processMetrics().registry.getSingleMetricAsString('stablegate_http_request_duration_seconds');
    expect(metrics).to.match(/stablegate_http_request_duration_seconds_count\{method="GET",route="\/pay\/:token\/status",status="200"\} \d+/);
    expect(metrics).to.not.include(token);
  });

  it('the status endpoint serializes once what paymentStatusJson gives the page (same fields, order and version)', () => {
    const view = {
      state: 'confirming', organizationName: 'X "Y"', orderReference: 'r-1', supportContact: null, currency: 'USDT', chainId: CHAIN, chainName: 'Local "chain"', protocol: 'evm', address: '0xabc',
      amount: '2', amountReceived: '2.5', remaining: '0', excess: '0.5', walletUri: null, confirmations: { current: 1, required: 3 },
      finality: 'confirmations', expiresAt: '2026-01-01T10:10:00.000Z', graceEndsAt: '2026-01-01T10:15:00.000Z', serverTime: '2026-01-01T10:01:00.000Z',
      txHash: null, explorerUrl: null, redirectUrl: 'https://shop.example/ok?a=1&b="2"', detectionDelayed: false, underReview: false, priceUsd: null, routeChoice: null, otherRoutePayments: [] as { currency: string; chainName: string; address: string; amount: string }[],
    } as const;
    expect(paymentStatusText(view)).to.equal(JSON.stringify(paymentStatusJson(view)));
    expect(paymentStatusText({ ...view, state: 'paid' })).to.not.equal(paymentStatusText(view));
    expect(paymentStatusText({ ...view, detectionDelayed: true })).to.not.equal(paymentStatusText(view));
  });

  it('QR content: EIP-681 on EVM chains, a tron: request with token contract and decimal amount on Tron', () => {
    const to = '0x00000000000000000000000000000000000000Aa';
    const token = { address: '0xdAC17F958D2ee523a2206206994597C13D831ec7' };
    const request = { units: 12_500_000n, amount: '12.5', id: 'ord_qr' };
    expect(walletUri({ protocol: 'evm', evmChainId: 1 }, token, to, request)).to.equal(
      `ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7@1/transfer?address=${to}&uint256=12500000`,
    );
    expect(walletUri({ protocol: 'tron' }, { address: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t' }, 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', request)).to.equal(
      'tron:TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf?token=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t&amount=12.5',
    );
    // A token whose contract is not known yet: nothing to name, the bare address.
    expect(walletUri({ protocol: 'tron' }, { address: null }, 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', request)).to.equal('TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf');
  });

  it("a Tron order's page: the QR and the wallet link carry tron:<address>?token=<contract>&amount=<exact decimal>, the bare address still shown and copyable", async () => {
    const contract = randomTronAddress();
    const t = buildTestApp({ env: { ...tokens, TOKEN_TRON_LOCAL_USDT: contract } });
    await seedPoolAddresses(org.organizationId, 'tron', 2);
    const { order, path } = await createOrder(t, { amount: '12.345678', currency: 'USDT', chainId: 'tron-local' });
    expect(order.address).to.match(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
    const page = await request(t.app).get(path);
    expect(page.status).to.equal(200);
    const unescape = (v: string) => v.replace(/&amp;/g, '&');
    const qr = unescape(page.text.match(/id="qr"[^>]*data-uri="([^"]*)"/)![1]);
    const link = unescape(page.text.match(/id="wallet-link" href="([^"]*)"/)![1]);
    expect(link).to.equal(qr);
    expect(qr).to.equal(`tron:${order.address}?token=${contract}&amount=12.345678`);
    const uri = new URL(qr);
    expect([uri.protocol, uri.pathname]).to.deep.equal(['tron:', order.address]);
    expect(Object.fromEntries(uri.searchParams)).to.deep.equal({ token: contract, amount: '12.345678' });
    // For wallets that read only an address: the bare address, with its copy button, as before.
    expect(page.text).to.include(`<code class="value address" id="address" aria-labelledby="address-label">${order.address}</code>`);
    expect(page.text).to.include(`data-copy="${order.address}"`);
  });

  describe('per-client-IP limit and TRUST_PROXY', () => {
    // Every forwarded client of these cases is its own: the budgets live in the run's Redis for a
    // minute, so a client drawn twice (at random) would find its budget already spent.
    let clients = 0;
    const nextClient = (net: '192.0.2' | '198.51.100') => `${net}.${++clients}`;
    it('by default trusts no proxy: X-Forwarded-For cannot buy a fresh limit', async () => {
      // Its own Redis prefix: every request of this run comes from 127.0.0.1.
      const t = buildTestApp({ env: { ...tokens, PAGE_RATE_LIMIT_PER_MINUTE: '3', REDIS_PREFIX: `${TEST_REDIS_PREFIX}ip` } });
      const { path } = await createOrder(t);
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await request(t.app).get(`${path}/status`).set('X-Forwarded-For', `203.0.113.${i}`)).status);
      expect(statuses).to.deep.equal([200, 200, 200, 429]);
      const limited = await request(t.app).get(path).set('X-Forwarded-For', '198.51.100.7');
      expect(limited.status).to.equal(429);
      expect(limited.text).to.include('Too many requests');
      expect(Number(limited.headers['retry-after'])).to.be.within(1, 60);
      const json = await request(t.app).get(`${path}/status`);
      expect(json.body.error).to.equal('RATE_LIMIT_EXCEEDED');
    });

    it('behind a trusted proxy (hop count or CIDR) counts each forwarded client on its own', async () => {
      for (const trust of ['1', '127.0.0.1/8,::1']) {
        const t = buildTestApp({ env: { ...tokens, PAGE_RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: trust } });
        const { path } = await createOrder(t);
        const client = nextClient('192.0.2');
        const a = [];
        for (let i = 0; i < 3; i++) a.push((await request(t.app).get(`${path}/status`).set('X-Forwarded-For', client)).status);
        expect(a, trust).to.deep.equal([200, 200, 429]);
        const other = await request(t.app).get(`${path}/status`).set('X-Forwarded-For', nextClient('198.51.100'));
        expect(other.status, trust).to.equal(200);
      }
    });

    it('behind a trusted proxy the status endpoint\'s early path and the routed page read the same client IP (one budget)', async () => {
      const t = buildTestApp({ env: { ...tokens, PAGE_RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: '1' } });
      const { path } = await createOrder(t);
      const client = nextClient('192.0.2');
      expect((await request(t.app).get(`${path}/status`).set('X-Forwarded-For', client)).status).to.equal(200);
      expect((await request(t.app).get(path).set('X-Forwarded-For', client)).status).to.equal(200);
      expect((await request(t.app).get(`${path}/status`).set('X-Forwarded-For', client)).status).to.equal(429);
      expect((await request(t.app).get(path).set('X-Forwarded-For', client)).status).to.equal(429);
    });

    it('counts an IPv6 client by its /64: walking the addresses of its own network buys no fresh limit', async () => {
      const t = buildTestApp({ env: { ...tokens, PAGE_RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: '1' } });
      const { path } = await createOrder(t);
      const network = `2001:db8:${(++clients).toString(16)}:7`;
      const statuses = [];
      for (let i = 1; i <= 3; i++) statuses.push((await request(t.app).get(`${path}/status`).set('X-Forwarded-For', `${network}::${i.toString(16)}`)).status);
      expect(statuses).to.deep.equal([200, 200, 429]);
      const neighbour = await request(t.app).get(`${path}/status`).set('X-Forwarded-For', `2001:db8:${(++clients).toString(16)}:7::1`);
      expect(neighbour.status, 'another /64').to.equal(200);
    });

    it('TRUST_PROXY is validated at start-up', () => {
      expect(loadConfig({ TRUST_PROXY: '' }).trustProxy).to.equal(false);
      expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).to.equal(2);
      expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 2001:db8::/32,loopback' }).trustProxy).to.deep.equal(['10.0.0.0/8', '2001:db8::/32', 'loopback']);
      for (const bad of ['true', '10.0.0.0/33', 'proxy.example', '1.2.3.4/8/9']) {
        expect(() => loadConfig({ TRUST_PROXY: bad }), bad).to.throw(ConfigError, /TRUST_PROXY/);
      }
      expect(() => loadConfig({ EXPLORER_TX_URL_ETHEREUM_LOCAL: 'https://x.example/tx/' }), 'no {txHash}').to.throw(ConfigError, /EXPLORER_TX_URL_ETHEREUM_LOCAL/);
    });
  });
});
