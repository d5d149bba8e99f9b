import { expect } from 'chai';
import request from 'supertest';
import { deliverWebhook } from '../../core/webhooks/delivery';
import { guardedLookup, isForbiddenAddress } from '../../core/webhooks/url-guard';
import { createService } from '../../core/service/service';
import { buildTestApp, capturedLogLines, createTestOrg, STYLES, testConfig, testContext, testLogger, type TestOrg } from '../helpers/harness';
import { expectError } from '../helpers/wire';
import { startReceiver, type Receiver } from '../helpers/webhooks';

describe('webhook URL guard: address classification', () => {
  it('refuses private, loopback, link-local, metadata, unspecified, CGNAT and ULA addresses, IPv4 and IPv6', () => {
    const forbidden = [
      '127.0.0.1', '127.255.255.254', '10.0.0.1', '10.255.1.2', '172.16.0.1', '172.31.255.255', '192.168.1.1',
      '169.254.169.254', '169.254.0.1', '0.0.0.0', '100.64.0.1', '100.127.255.255', '224.0.0.1', '255.255.255.255',
      '::1', '::', 'fe80::1', 'fc00::1', 'fd00:ec2::254', 'ff02::1',
      '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '64:ff9b::a00:1', '2002:7f00:1::1',
      'not-an-ip',
    ];
    const allowed = ['93.184.216.34', '8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'];
    for (const a of forbidden) expect(isForbiddenAddress(a), a).to.equal(true);
    for (const a of allowed) expect(isForbiddenAddress(a), a).to.equal(false);
  });

  it('hands the socket the checked address, in both lookup shapes (single and all)', async () => {
    const single = await new Promise<unknown[]>((resolve) => guardedLookup('8.8.8.8', {}, (...args: unknown[]) => resolve(args)));
    expect(single).to.deep.equal([null, '8.8.8.8', 4]);
    const all = await new Promise<unknown[]>((resolve) => guardedLookup('2606:4700:4700::1111', { all: true }, (...args: unknown[]) => resolve(args)));
    expect(all).to.deep.equal([null, [{ address: '2606:4700:4700::1111', family: 6 }]]);
    const mapped = await new Promise<unknown[]>((resolve) => guardedLookup('::ffff:10.0.0.1', { all: true }, (...args: unknown[]) => resolve(args)));
    expect((mapped[0] as Error).message).to.match(/non-public address/);
  });

  it('logs a warning at start-up while WEBHOOK_ALLOW_INSECURE is on, and none when off', async () => {
    const marker = 'WEBHOOK_ALLOW_INSECURE is on';
    const count = () => capturedLogLines.filter((l) => l.includes(marker)).length;
    const before = count();
    const on = await createService(testConfig({ WEBHOOK_ALLOW_INSECURE: 'true' }), { logger: testLogger(), migrate: false });
    await on.dbHandle.close();
    expect(count()).to.equal(before + 1);
    expect(capturedLogLines.find((l) => l.includes(marker))).to.include('"level":"warn"');
    const off = await createService(testConfig({ WEBHOOK_ALLOW_INSECURE: 'false' }), { logger: testLogger(), migrate: false });
    await off.dbHandle.close();
    expect(count()).to.equal(before + 1);
  });

  it('refuses at connect time a host name resolving to a private address', async () => {
    const err = await new Promise<Error | null>((resolve) => guardedLookup('localhost', {}, (e) => resolve(e)));
    expect(err?.message).to.match(/localhost resolves to .*non-public address/);
  });
});

for (const style of STYLES) {
  describe(`webhook URL guard at registration, insecure off (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style, env: { WEBHOOK_ALLOW_INSECURE: 'false' } });
    let org: TestOrg;
    before(async () => {
      org = await createTestOrg('Guard org');
    });
    const create = (url: string) => request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url, events: ['order.completed'] });

    it('rejects loopback, private, metadata and privately resolving URLs, and http', async () => {
      for (const url of [
        'https://127.0.0.1/hook',
        'https://[::1]/hook',
        'https://10.1.2.3/hook',
        'https://169.254.169.254/latest/meta-data',
        'https://localhost/hook',
        'https://[::ffff:127.0.0.1]/hook',
        'https://0x7f000001/hook',
        'https://100.64.1.1/hook',
        'https://[fd00::1]/hook',
        'http://93.184.216.34/hook',
      ]) {
        const res = await create(url);
        expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
        expect(res.body.message, url).to.match(/url/);
      }
      const put = await request(app).put('/api/v1/webhooks/endpoints/whe_nope').set('X-API-Key', org.keys.admin).send({ url: 'https://10.0.0.1/' });
      expectError(style, put, 400, 'VALIDATION_ERROR', 'ValidationError');
    });

    it('accepts an https URL on a public address', async () => {
      const res = await create('https://93.184.216.34/hook');
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
    });
  });
}

describe('webhook URL guard at connect time (DNS rebinding)', () => {
  // Registered while insecure was allowed (or a DNS answer changed since): the worker's own
  // check refuses to connect, and the receiver never sees a request.
  const insecure = buildTestApp({ style: 'b', env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  let receiver: Receiver;
  let org: TestOrg;
  before(async () => {
    receiver = await startReceiver();
    org = await createTestOrg('Rebinding org');
  });
  after(async () => receiver?.close());

  for (const host of ['localhost', '127.0.0.1']) {
    it(`does not connect to ${host} when insecure is off`, async () => {
      const ep = await request(insecure.app)
        .post('/api/v1/webhooks/endpoints')
        .set('X-API-Key', org.keys.admin)
        .send({ url: `https://${host}:${receiver.port}/hook`, events: ['order.completed'] });
      expect(ep.status).to.equal(201);
      const test = await request(insecure.app).post(`/api/v1/webhooks/endpoints/${ep.body.id}/test`).set('X-API-Key', org.keys.admin);
      const deliveryId = test.body.deliveries[0].id;
      const secure = testContext(testConfig({ WEBHOOK_ALLOW_INSECURE: 'false', WEBHOOK_RETRY_SCHEDULE: '0,60' }));
      const result = await deliverWebhook(secure, deliveryId, 1);
      expect(result).to.include({ outcome: 'retry', statusCode: null });
      const events = await request(insecure.app).get('/api/v1/webhooks/events').query({ endpoint: ep.body.id }).set('X-API-Key', org.keys.viewer);
      const [attempt] = events.body.data[0].deliveries[0].attempts;
      expect(attempt.statusCode).to.equal(null);
      expect(attempt.error).to.match(/non-public address/);
      expect(receiver.requests).to.have.length(0);
      // Nothing more for anyone to pick up.
      expect((await request(insecure.app).delete(`/api/v1/webhooks/endpoints/${ep.body.id}`).set('X-API-Key', org.keys.admin)).status).to.equal(200);
    });
  }
});
