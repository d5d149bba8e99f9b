import { expect } from 'chai';
import postgres from 'postgres';
import request from 'supertest';
import { TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, knownSecrets } from '../helpers/harness';
import { spawnEntry } from '../helpers/processes';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

describe('npm start on an empty database', function () {
  this.timeout(90_000);
  const dbUrl = TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/$1_first');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sg-first-start-'));

  after(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    const admin = postgres(TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/postgres'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${new URL(dbUrl).pathname.slice(1)}" with (force)`);
    await admin.end();
  });

  it('creates the database, prints an Owner key once, serves /health and the key works; SIGTERM stops it cleanly', async () => {
    const p = spawnEntry('scripts/start.ts', {
      DATABASE_URL: dbUrl,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}first`,
      PORT: '0',
      DATA_DIR: dataDir,
    });
    try {
      const listening = await p.waitFor(/API listening/, 60_000);
      const base = `http://127.0.0.1:${JSON.parse(listening).port}`;
      // The key is printed once the ports are bound (a busy port fails before any key exists), and
      // before the process says it is ready (test/foundation/start-readiness.test.ts).
      await p.waitFor(/Owner API key/, 60_000);
      await p.waitFor(/"msg":"ready: /, 60_000);
      const key = /Owner API key \(shown once, store it now\): (pk_[A-Za-z0-9_-]+)/.exec(p.stdout())?.[1];
      expect(key, p.stdout()).to.be.a('string');
      knownSecrets.add(key!);
      const health = await request(base).get('/health');
      expect(health.status).to.equal(200);
      expect(health.body.status).to.equal('ok');
      const orgs = await request(base).get('/api/v1/organizations').set('X-API-Key', key!);
      expect(orgs.status).to.equal(200);
      expect(orgs.body.data.map((o: { name: string }) => o.name)).to.deep.equal(['Local organization']); // a list (style B, the default)
      // The key is printed on the terminal once, and never in a structured log line.
      const jsonLines = p.stdout().split('\n').filter((l) => l.startsWith('{'));
      expect(jsonLines.length).to.be.greaterThan(2);
      expect(jsonLines.some((l) => l.includes(key!))).to.equal(false);
      expect(p.stdout().split(key!).length - 1).to.equal(2); // the key line and the curl example
      p.child.kill('SIGTERM');
      expect(await p.exited).to.equal(0);
    } finally {
      p.killGroup();
    }
    // A second start finds the organization and prints no key.
    const again = spawnEntry('scripts/start.ts', { DATABASE_URL: dbUrl, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: `${TEST_REDIS_PREFIX}first`, PORT: '0', DATA_DIR: dataDir });
    try {
      await again.waitFor(/API listening/, 60_000);
      expect(again.stdout()).to.not.match(/pk_/);
      again.child.kill('SIGTERM');
      expect(await again.exited).to.equal(0);
    } finally {
      again.killGroup();
    }
  });
});
