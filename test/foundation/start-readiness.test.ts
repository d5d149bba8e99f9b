import { expect } from 'chai';
import net from 'node:net';
import postgres from 'postgres';
import request from 'supertest';
import { TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, knownSecrets } from '../helpers/harness';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { DEFAULT_METRICS_PORT } from '../../core/platform/config';
import { tokenEnv } from '../helpers/orders';
import { eventually } from '../helpers/wait';

/** A database of this file's own for one start (dropped after). */
function startDatabase(suffix: string): { url: string; drop(): Promise<void> } {
  const url = TEST_DATABASE_URL.replace(/\/([^/]+)$/, `/$1_${suffix}`);
  return {
    url,
    async drop() {
      const admin = postgres(TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/postgres'), { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists "${new URL(url).pathname.slice(1)}" with (force)`);
      await admin.end();
    },
  };
}

async function stop(p: Spawned): Promise<void> {
  p.child.kill('SIGTERM');
  await Promise.race([p.exited, new Promise((r) => setTimeout(r, 20_000))]);
  p.killGroup();
}

/** Holds a TCP port on 127.0.0.1 (or finds it held by someone else already: busy either way). */
async function holdPort(port: number): Promise<() => void> {
  const server = net.createServer();
  const held = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  return () => void (held && server.close());
}

describe('npm start: ready before /health says so', function () {
  this.timeout(120_000);
  const db = startDatabase('ready');
  after(() => db.drop());

  it('the first /health 200 comes after the Owner key is printed and the dev pool is filled: an order succeeds at once', async () => {
    const p = spawnEntry('scripts/start.ts', {
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}ready`,
      PORT: '0',
      START_LOCAL_CHAIN: 'false',
      ...tokenEnv(),
    });
    try {
      const listening = await p.waitFor(/API listening/, 60_000);
      const base = `http://127.0.0.1:${JSON.parse(listening).port}`;
      // Poll as a start script would: the first 200 must find everything the start promises.
      const answers: number[] = [];
      let stdoutAtReady = '';
      for (let i = 0; i < 3000; i++) {
        const health = await request(base).get('/health');
        answers.push(health.status);
        if (health.status === 200) {
          stdoutAtReady = p.stdout();
          break;
        }
        expect(health.status).to.equal(503);
        expect(health.body.status).to.equal('starting');
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(answers.at(-1)).to.equal(200);
      // A start's 503s are expected answers: each logged as info, never as an error (issue 37).
      expect(answers.length, 'at least one 503 while starting').to.be.greaterThan(1);
      const startingLines = () => p.stdout().split('\n').filter((l) => l.includes('"url":"/health"') && l.includes('"statusCode":503'));
      await eventually(() => startingLines().length === answers.length - 1, 10_000, "every 503's request line");
      expect(startingLines().map((l) => JSON.parse(l).level)).to.deep.equal(startingLines().map(() => 'info'));
      const key = /Owner API key \(shown once, store it now\): (pk_[A-Za-z0-9_-]+)/.exec(stdoutAtReady)?.[1];
      expect(key, stdoutAtReady).to.be.a('string');
      knownSecrets.add(key!);
      expect(stdoutAtReady).to.match(/Added \d+ watch-only development [A-Za-z, ]+ addresses to its pool/);
      const order = await request(base)
        .post('/api/v1/orders')
        .set('X-API-Key', key!)
        .send({ orderReference: 'first-order', amount: '1.00', currency: 'USDT', chainId: 'ethereum-local' });
      expect(order.status, JSON.stringify(order.body)).to.equal(201);
      expect(p.stdout()).to.match(/"msg":"ready: /);
    } finally {
      await stop(p);
    }
  });
});

describe('npm start: every port is bound before anything is announced', function () {
  this.timeout(120_000);
  const busy = startDatabase('busymetrics');
  const fallback = startDatabase('metricsfallback');
  after(() => Promise.all([busy.drop(), fallback.drop()]));

  it('an explicitly configured METRICS_PORT that is busy stops the start in the JSON log format, before "API listening", "workers started" or a key', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    const p = spawnEntry('scripts/start.ts', { DATABASE_URL: busy.url, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: `${TEST_REDIS_PREFIX}busym`, PORT: '0', METRICS_PORT: String(port), START_LOCAL_CHAIN: 'false' });
    try {
      expect(await p.exited).to.equal(1);
      const fatal = p
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: string; msg: string })
        .find((l) => l.level === 'fatal');
      expect(fatal, p.stdout()).to.not.equal(undefined);
      expect(fatal!.msg).to.include(`METRICS_PORT ${port} is already in use`);
      expect(p.stdout()).to.not.match(/API listening|workers started|pk_/);
      expect(p.stderr()).to.include(`METRICS_PORT ${port} is already in use`);
    } finally {
      blocker.close();
      p.killGroup();
    }
  });

  it('on NETWORK=local a busy default metrics port falls back to a free one, and the banner prints it', async () => {
    const release = await holdPort(DEFAULT_METRICS_PORT);
    // METRICS_PORT blank: the default, as on a developer's machine.
    const p = spawnEntry('scripts/start.ts', { DATABASE_URL: fallback.url, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: `${TEST_REDIS_PREFIX}fallbk`, PORT: '0', METRICS_PORT: '', NETWORK: 'local', START_LOCAL_CHAIN: 'false' });
    try {
      const line = await p.waitFor(/ {2}Metrics: http:\/\/127\.0\.0\.1:\d+\/metrics/, 60_000);
      const port = Number(/127\.0\.0\.1:(\d+)\/metrics/.exec(line)![1]);
      expect(port).to.not.equal(DEFAULT_METRICS_PORT);
      expect(line).to.include(`default port ${DEFAULT_METRICS_PORT}`);
      const scrape = await request(`http://127.0.0.1:${port}`).get('/metrics');
      expect(scrape.status).to.equal(200);
      expect(scrape.text).to.include('stablegate_');
      for (const k of p.stdout().matchAll(/pk_[A-Za-z0-9_-]+/g)) knownSecrets.add(k[0]);
    } finally {
      release();
      await stop(p);
    }
  });
});
