import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { createTestOrg, testContext, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, testDb } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { eventually } from '../helpers/wait';

const REQUEST_TIMEOUT_MS = 500;

/**
 * `npm start` runs the API and the jobs in one process. Its jobs once ran on the API's pool, with
 * the API's bound (DATABASE_REQUEST_TIMEOUT_MS, statements cut server-side a tenth earlier): a scan
 * or maintenance statement that waited longer than a request may (a lock, a large range, a loaded
 * machine) failed on every try, and its chain stopped moving. The jobs now have a worker's pool
 * and bound (DATABASE_WORKER_TIMEOUT_MS). Here every scan's statement on the chain's checkpoint row
 * waits 2 s behind a lock: longer than the request bound, well inside the worker's.
 */
describe('npm start: the jobs run with a worker bound, not the API request bound', function () {
  this.timeout(180_000);
  let chain: TestChain;
  let start: Spawned;

  before(async () => {
    chain = await startTestChain();
    const ctx = testContext();
    useTestChain(ctx.registry, chain);
    const org = await createTestOrg('Start pools org');
    await seedPoolAddresses(org.organizationId, 'evm', 5);
    await resetCheckpointToHead(ctx, chain);
    start = spawnEntry('scripts/start.ts', {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}startpools`,
      NETWORK: 'local',
      START_LOCAL_CHAIN: 'false',
      LOG_LEVEL: 'info',
      PORT: '0',
      METRICS_PORT: '0',
      DATABASE_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      DATABASE_WORKER_TIMEOUT_MS: '20000',
      CHAIN_SCAN_INTERVAL_MS: '200',
      RPC_URLS_ETHEREUM_LOCAL: chain.url,
      TOKEN_ETHEREUM_LOCAL_USDT: chain.tokens.USDT,
      TOKEN_ETHEREUM_LOCAL_USDC: chain.tokens.USDC,
      TOKEN_ETHEREUM_LOCAL_DAI: chain.tokens.DAI,
    });
    await start.waitFor(/"msg":"ready: /, 90_000);
  });
  after(async () => {
    start?.killGroup('SIGKILL');
    await chain?.stop();
  });

  const scannedAt = async (): Promise<number> => {
    const rows = (await testDb().execute(sql`select scanned_at from chain_checkpoints where chain_id = ${LOCAL_CHAIN_ID}`)) as unknown as { scanned_at: string | Date | null }[];
    return rows[0]?.scanned_at ? new Date(rows[0].scanned_at).getTime() : 0;
  };

  it('a scan that waits 2 s on a lock completes instead of being cut at the request bound', async () => {
    await eventually(async () => (await scannedAt()) > Date.now() - 2000, 30_000, 'the process scanning the chain');
    const logBefore = start.stdout().length;
    const held = Date.now();
    // Each scan run ends by writing its checkpoint row's scanned_at: that write waits for the lock.
    await testDb().transaction(async (tx) => {
      await tx.execute(sql`select 1 from chain_checkpoints where chain_id = ${LOCAL_CHAIN_ID} for update`);
      await tx.execute(sql`select pg_sleep(2)`);
    });
    await eventually(async () => (await scannedAt()) >= held + 2000, 20_000, 'a scan completed after waiting for the lock');
    const lines = start.stdout().slice(logBefore);
    // A scan cut at the request bound is a failed job of the chain (its statement cancelled).
    const failedScans = lines.split('\n').filter((l) => l.includes('chain-scan-ethereum-local') && l.includes('"msg":"job failed"'));
    expect(failedScans, 'no scan of the chain failed while it waited').to.deep.equal([]);
  });
});
