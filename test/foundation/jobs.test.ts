import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { idempotencyRecords } from '../../db/schema';
import { startWorkerProcess } from '../../workers/runtime';
import { QUEUE_NAMES, repeatableSchedules } from '../../core/jobs/catalog';
import { PROCESSORS } from '../../workers/processors';
import { createTestOrg, knownSecrets, testConfig, testContext, testDb, testRedis, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL } from '../helpers/harness';
import { eventually } from '../helpers/wait';
import { spawnEntry } from '../helpers/processes';
import { ManualClock } from '../../core/platform/clock';

describe('job tier', () => {
  it('has exactly one processor per queue of the catalog', () => {
    expect(Object.keys(PROCESSORS).sort()).to.deep.equal([...QUEUE_NAMES].sort());
  });

  it('registers repeatable jobs with job schedulers once, however many workers start', async () => {
    // Its own prefix: the schedulers it registers must not feed other tests' queues.
    const config = testConfig({ IDEMPOTENCY_CLEANUP_INTERVAL_MS: '200', WORKER_QUEUES: 'idempotency-cleanup', REDIS_PREFIX: `${TEST_REDIS_PREFIX}jobs` });
    const ctx = testContext(config);
    const org = await createTestOrg('Jobs org');
    const past = new Date(Date.now() - 48 * 3600_000);
    await testDb().insert(idempotencyRecords).values({ organizationId: org.organizationId, key: 'old', fingerprint: 'f', state: 'completed', createdAt: past, expiresAt: new Date(past.getTime() + 24 * 3600_000) });
    await testDb().insert(idempotencyRecords).values({ organizationId: org.organizationId, key: 'fresh', fingerprint: 'f', state: 'completed', expiresAt: new Date(Date.now() + 3600_000) });

    const first = await startWorkerProcess(ctx);
    const second = await startWorkerProcess({ ...ctx, clock: new ManualClock() });
    try {
      const schedulers = await testRedis().keys(`${TEST_REDIS_PREFIX}jobs:idempotency-cleanup:repeat*`);
      expect(schedulers.length).to.be.greaterThan(0);
      const expected = repeatableSchedules(config, ctx.registry).filter((s) => s.queue === 'idempotency-cleanup');
      expect(expected).to.have.length(1);
      let remaining: string[] = [];
      await eventually(
        async () => {
          remaining = (await testDb().select({ key: idempotencyRecords.key }).from(idempotencyRecords).where(sql`${idempotencyRecords.organizationId} = ${org.organizationId}`)).map((r) => r.key);
          return !remaining.includes('old');
        },
        5000,
        'the cleanup job',
        100,
      ).catch(() => {});
      expect(remaining).to.deep.equal(['fresh']);
    } finally {
      await first.close();
      await second.close();
    }
  });
});

describe('admin CLI', function () {
  this.timeout(30_000);
  it('create-org prints the organization id and its Owner key once', async () => {
    const p = spawnEntry('scripts/admin.ts', { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL }, ['create-org', 'CLI Org']);
    expect(await p.exited).to.equal(0);
    const orgId = /organization: (org_[a-z0-9]+)/.exec(p.stdout())?.[1];
    const key = /owner key \(shown once\): (pk_[A-Za-z0-9_-]+)/.exec(p.stdout())?.[1];
    expect(orgId).to.be.a('string');
    expect(key).to.be.a('string');
    knownSecrets.add(key!);
    const rows = await testDb().execute(sql`select name from organizations where id = ${orgId}`);
    expect(rows[0].name).to.equal('CLI Org');
  });

  it('prints usage and exits 2 without a name', async () => {
    const p = spawnEntry('scripts/admin.ts', { DATABASE_URL: TEST_DATABASE_URL }, ['create-org']);
    expect(await p.exited).to.equal(2);
    expect(p.stderr()).to.include('Usage: npm run admin -- create-org');
  });
});
