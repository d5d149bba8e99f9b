import { expect } from 'chai';
import { Queue, Worker, type Job } from 'bullmq';
import { createDb, isDatabaseUnreachable, type DbHandle } from '../../db/client';
import { startJobWatchdog, type JobWatchdog } from '../../workers/job-watchdog';
import { testLogger, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL } from '../helpers/harness';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';

/**
 * The worker's last line of defence (issue 37): a job waiting on a database connection that went
 * quiet, with no deadline catching it (here the pool's bound is ten minutes), keeps its BullMQ lock
 * and would wait for good; the watchdog sees no job finish, recycles the pool, and the job fails
 * (to be retried) instead.
 */
describe('job watchdog: jobs making no progress recycle the database pool', function () {
  this.timeout(60_000);
  let proxy: TcpProxy;
  let handle: DbHandle;
  let queue: Queue;
  let worker: Worker;
  let watchdog: JobWatchdog;
  const recycled: string[] = [];
  const outcomes = new Map<string, (result: { failed: Error | null }) => void>();

  before(async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(TEST_DATABASE_URL).port || 5432) });
    handle = createDb(proxy.urlFor(TEST_DATABASE_URL), { max: 1, answerWithinMs: 600_000 });
    const redis = new URL(TEST_REDIS_URL);
    const connection = { host: redis.hostname, port: Number(redis.port || 6379), maxRetriesPerRequest: null };
    const name = 'watchdog-test';
    const prefix = `${TEST_REDIS_PREFIX}watchdog`;
    queue = new Queue(name, { connection, prefix });
    worker = new Worker(name, async () => handle.sql`select 1 as one`, { connection, prefix, concurrency: 1 });
    worker.on('completed', (job: Job) => outcomes.get(job.id!)?.({ failed: null }));
    worker.on('failed', (job: Job | undefined, err: Error) => job && outcomes.get(job.id!)?.({ failed: err }));
    watchdog = startJobWatchdog([worker], {
      stallAfterMs: 2000,
      recycleDatabase: (reason) => (recycled.push(reason), handle.recycle(reason)),
      logger: testLogger(),
    });
  });
  after(async () => {
    watchdog?.close();
    await worker?.close(true);
    await queue?.obliterate({ force: true }).catch(() => {});
    await queue?.close();
    proxy?.heal();
    await handle?.close().catch(() => {});
    await proxy?.close();
  });

  const run = async (id: string) => {
    const outcome = new Promise<{ failed: Error | null }>((resolve) => outcomes.set(id, resolve));
    const started = Date.now();
    await queue.add('q', {}, { jobId: id, attempts: 1 });
    return { ...(await outcome), tookMs: Date.now() - started };
  };

  it('fails the stuck job within a few seconds, and the next job gets a new connection', async () => {
    expect((await run('before')).failed).to.equal(null);
    proxy.partition();
    const stuck = await run('during');
    expect(stuck.failed, 'the stuck job fails').to.not.equal(null);
    expect(isDatabaseUnreachable(stuck.failed)).to.equal(true);
    expect(stuck.tookMs).to.be.below(10_000);
    expect(recycled).to.have.length(1);
    proxy.heal();
    const after = await run('after');
    expect(after.failed).to.equal(null);
  });
});
