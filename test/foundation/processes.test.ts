import { expect } from 'chai';
import http from 'node:http';
import request from 'supertest';
import { createProducerRedis } from '../../core/platform/redis';
import { createDb } from '../../db/client';
import { buildTestApp, createTestOrg, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL } from '../helpers/harness';
import { eventually } from '../helpers/wait';
import { closedPort, spawnEntry, startPrivateRedis } from '../helpers/processes';

const baseEnv = () => ({ DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: `${TEST_REDIS_PREFIX}proc`, PORT: '0', LOG_LEVEL: 'info' });

describe('health when a dependency is down', () => {
  it('answers 503 "degraded" naming Redis when Redis is stopped, and 200 again when it is back', async () => {
    const redisServer = await startPrivateRedis();
    const redis = createProducerRedis(redisServer.url);
    try {
      const { app } = buildTestApp({ redis });
      await eventually(() => redis.status === 'ready', 10_000, 'the Redis connection');
      const up = await request(app).get('/health');
      expect(up.status).to.equal(200);
      await redisServer.stop();
      const down = await request(app).get('/health');
      expect(down.status).to.equal(503);
      expect(down.body).to.include({ status: 'degraded' });
      expect(down.body.checks).to.deep.equal({ database: 'ok', redis: 'down', redisEviction: 'unknown', chains: 'ok' });
      expect(down.body.version).to.be.a('string');
    } finally {
      redis.disconnect();
      await redisServer.stop();
    }
  });
});

describe('health when PostgreSQL is unreachable', () => {
  it('answers 503 "degraded" naming the database', async () => {
    const port = await closedPort();
    const deadDb = createDb(`postgres://postgres@127.0.0.1:${port}/x`, { max: 1 });
    try {
      const { app } = buildTestApp({ db: deadDb.db });
      const res = await request(app).get('/health');
      expect(res.status).to.equal(503);
      expect(res.body).to.include({ status: 'degraded' });
      expect(res.body.checks).to.deep.equal({ database: 'down', redis: 'ok', redisEviction: 'ok', chains: 'unknown' });
    } finally {
      await deadDb.close();
    }
  });
});

describe('process start-up and shutdown', function () {
  this.timeout(60_000);

  it('explains an unreachable PostgreSQL in one line, without a stack trace', async () => {
    const port = await closedPort();
    const p = spawnEntry('api/main.ts', { ...baseEnv(), DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x` });
    expect(await p.exited).to.equal(1);
    const lines = p.stderr().trim().split('\n').filter((l) => !/nodedir/.test(l));
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/^Cannot reach PostgreSQL/).and.include('DATABASE_URL');
  });

  it('explains an unreachable Redis in one line', async () => {
    const port = await closedPort();
    const p = spawnEntry('workers/main.ts', { ...baseEnv(), REDIS_URL: `redis://127.0.0.1:${port}` });
    expect(await p.exited).to.equal(1);
    const lines = p.stderr().trim().split('\n').filter((l) => !/nodedir/.test(l));
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/^Cannot reach Redis/).and.include('REDIS_URL');
  });

  it('explains invalid configuration and exits', async () => {
    const p = spawnEntry('api/main.ts', { ...baseEnv(), API_STYLE: 'z' });
    expect(await p.exited).to.equal(1);
    expect(p.stderr()).to.include('API_STYLE must be one of a, b');
  });

  it('API: on SIGTERM finishes the request in flight, then exits 0', async () => {
    const org = await createTestOrg('Shutdown org');
    const p = spawnEntry('api/main.ts', baseEnv());
    try {
      const line = await p.waitFor(/API listening/);
      const port = JSON.parse(line).port as number;
      const body = JSON.stringify({ name: 'in flight', role: 'viewer' });
      // A request whose body is still arriving when the signal comes.
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port, method: 'POST', path: `/api/v1/organizations/${org.organizationId}/api-keys`, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-api-key': org.ownerKey } },
          (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          },
        );
        req.on('error', reject);
        req.write(body.slice(0, 10));
        setTimeout(() => {
          p.child.kill('SIGTERM');
          setTimeout(() => req.end(body.slice(10)), 500);
        }, 300);
      });
      const res = await answer;
      expect(res.status).to.equal(201);
      expect(JSON.parse(res.body).name).to.equal('in flight');
      expect(await p.exited).to.equal(0);
      expect(p.stdout()).to.include('shut down cleanly');
    } finally {
      p.killGroup();
    }
  });

  it('API: on SIGTERM under kept-alive clients sending back to back, answers with Connection: close and exits well within SHUTDOWN_TIMEOUT_MS', async () => {
    const p = spawnEntry('api/main.ts', { ...baseEnv(), SHUTDOWN_TIMEOUT_MS: '8000' });
    const agents: http.Agent[] = [];
    try {
      const port = JSON.parse(await p.waitFor(/API listening/)).port as number;
      // Four clients, each sending back to back on one kept-alive connection (a load balancer's upstream pool).
      let signalledAt = 0;
      const afterSignal: (string | undefined)[] = [];
      let before = 0;
      const get = (agent: http.Agent) =>
        new Promise<string | undefined>((resolve, reject) => {
          const req = http.get({ host: '127.0.0.1', port, path: '/health', agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.headers.connection));
          });
          req.on('error', reject);
        });
      const loop = async (agent: http.Agent) => {
        for (;;) {
          const startedAt = Date.now();
          let connection: string | undefined;
          try {
            connection = await get(agent);
          } catch {
            return; // refused or reset: the server is gone
          }
          if (signalledAt && startedAt > signalledAt) afterSignal.push(connection);
          else before++;
        }
      };
      for (let i = 0; i < 4; i++) agents.push(new http.Agent({ keepAlive: true, maxSockets: 1 }));
      const loops = Promise.all(agents.map(loop));
      await eventually(() => before >= 100, 20_000, 'the clients under way');
      const killedAt = Date.now();
      p.child.kill('SIGTERM');
      // Requests the process read before its handler ran were answered as before the signal: judged
      // are those sent once it said it was shutting down (it starts draining in the same tick).
      await p.waitFor(/shutting down/, 5_000);
      signalledAt = Date.now();
      const code = await p.exited;
      const tookMs = Date.now() - killedAt;
      await loops;
      expect(code, p.stdout()).to.equal(0);
      expect(tookMs, 'exit after SIGTERM').to.be.below(5000);
      expect(p.stdout()).to.not.include('shutdown deadline');
      // Every request sent after the signal that was answered told its client to close the connection.
      expect(afterSignal.every((c) => c === 'close'), JSON.stringify(afterSignal)).to.equal(true);
    } finally {
      for (const a of agents) a.destroy();
      p.killGroup();
    }
  });

  it('API: a request still open at SHUTDOWN_TIMEOUT_MS is cut and the process exits', async () => {
    const org = await createTestOrg('Deadline org');
    const p = spawnEntry('api/main.ts', { ...baseEnv(), SHUTDOWN_TIMEOUT_MS: '1500' });
    try {
      const port = JSON.parse(await p.waitFor(/API listening/)).port as number;
      // A body that never finishes arriving: the request stays in flight.
      const cut = new Promise<string>((resolve) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/v1/orders', headers: { 'content-type': 'application/json', 'content-length': 1000, 'x-api-key': org.ownerKey } }, (res) => {
          res.resume();
          res.on('end', () => resolve(`answered ${res.statusCode}`));
        });
        req.on('error', (err) => resolve(`cut: ${err.message}`));
        req.write('{"amount":');
      });
      await new Promise((r) => setTimeout(r, 300));
      const signalledAt = Date.now();
      p.child.kill('SIGTERM');
      const code = await p.exited;
      const tookMs = Date.now() - signalledAt;
      expect(await cut).to.match(/^cut/);
      expect(tookMs).to.be.within(1400, 4500);
      expect(code).to.equal(0);
      expect(p.stdout()).to.include('shutdown deadline');
    } finally {
      p.killGroup();
    }
  });

  it('worker: on SIGTERM closes its workers and exits 0', async () => {
    const p = spawnEntry('workers/main.ts', baseEnv());
    try {
      await p.waitFor(/workers started/);
      p.child.kill('SIGTERM');
      expect(await p.exited).to.equal(0);
      expect(p.stdout()).to.include('shut down cleanly');
    } finally {
      p.killGroup();
    }
  });
});
