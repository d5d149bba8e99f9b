import { expect } from 'chai';
import net from 'node:net';
import request from 'supertest';
import { buildTestApp, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL } from '../helpers/harness';
import { spawnEntry, type Spawned } from '../helpers/processes';

/** One raw HTTP exchange (a request Node's parser refuses never reaches fetch's shape of things). */
function rawExchange(port: number, text: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (c) => (answer += c.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, ...rest] = answer.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head, body: rest.join('\r\n\r\n') });
    });
  });
}

/**
 * Found by the fault run (issue 32): unknown paths outside /api/v1 got Express's default HTML 404,
 * over-long URLs and headers Node's bare 431. Every answer is in the deployment's error format, or
 * for a browser the public pages' not-found page.
 */
describe('answers outside the routes: unknown paths, over-long URLs and headers (a real API process)', function () {
  this.timeout(60_000);
  let api: Spawned;
  let port: number;

  before(async () => {
    api = spawnEntry('api/main.ts', { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: `${TEST_REDIS_PREFIX}edge`, PORT: '0', LOG_LEVEL: 'info' });
    port = JSON.parse(await api.waitFor(/API listening/, 45_000)).port;
  });
  after(() => api?.killGroup('SIGKILL'));

  it('an unknown path outside /api/v1 is a 404 in the error format for an API client', async () => {
    for (const path of ['/no-such-thing', '/wp-login.php', '/api/v2/orders']) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { accept: 'application/json' } });
      expect(res.status, path).to.equal(404);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      expect(await res.json()).to.deep.include({ code: 'RESOURCE_NOT_FOUND', statusCode: 404, error: 'Not Found' });
    }
    // No Accept header at all (curl, scripts): the error format too.
    const bare = await rawExchange(port, 'GET /nothing-here HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(bare.status).to.equal(404);
    expect(JSON.parse(bare.body)).to.include({ code: 'RESOURCE_NOT_FOUND' });
  });

  it('a browser asking for an unknown path gets the public pages\' not-found page under their headers', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/no-such-page`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(res.status).to.equal(404);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy')).to.be.a('string');
    expect(await res.text()).to.match(/<h1>/);
  });

  it('an over-long URL is a 414 in the error format, whether the app or Node\'s parser refuses it', async () => {
    const inApp = await fetch(`http://127.0.0.1:${port}/api/v1/orders?q=${'a'.repeat(9000)}`);
    expect(inApp.status).to.equal(414);
    expect(await inApp.json()).to.include({ code: 'URI_TOO_LONG', statusCode: 414 });
    const inParser = await rawExchange(port, `GET /api/v1/orders?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(inParser.status).to.equal(414);
    expect(inParser.headers).to.match(/content-type: application\/json/i);
    expect(JSON.parse(inParser.body)).to.include({ code: 'URI_TOO_LONG', statusCode: 414 });
  });

  it('over-large headers are a 431 in the error format', async () => {
    const res = await rawExchange(port, `GET /api/v1/orders HTTP/1.1\r\nHost: x\r\nX-Filler: ${'b'.repeat(20_000)}\r\n\r\n`);
    expect(res.status).to.equal(431);
    expect(JSON.parse(res.body)).to.include({ code: 'HEADERS_TOO_LARGE', statusCode: 431, error: 'Request Header Fields Too Large' });
  });

  it('style A deployments answer the same cases in their own error format', async () => {
    const { app } = buildTestApp({ style: 'a' });
    const missing = await request(app).get('/no-such-thing').set('Accept', 'application/json');
    expect(missing.status).to.equal(404);
    expect(missing.body).to.deep.include({ success: false, error: 'NotFound' });
    const long = await request(app).get(`/api/v1/orders?q=${'a'.repeat(9000)}`);
    expect(long.status).to.equal(414);
    expect(long.body).to.deep.include({ success: false, error: 'UriTooLong' });
  });
});
