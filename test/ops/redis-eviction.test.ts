import { expect } from 'chai';
import { Redis } from 'ioredis';
import request from 'supertest';
import { ConfigError } from '../../core/platform/config';
import { createProducerRedis, waitForRedis } from '../../core/platform/redis';
import { checkRedisFitForQueues, readEvictionPolicy } from '../../core/platform/redis-eviction';
import { newPlatformMemory } from '../../core/platform/process-memory';
import { buildTestApp, capturedLogLines, TEST_DATABASE_URL, TEST_REDIS_PREFIX, testLogger } from '../helpers/harness';
import { spawnEntry, startPrivateRedis } from '../helpers/processes';

describe('Redis fit for queues (maxmemory-policy)', function () {
  this.timeout(60_000);
  let lru: Awaited<ReturnType<typeof startPrivateRedis>>;
  let noInfo: Awaited<ReturnType<typeof startPrivateRedis>>;
  const connections: Redis[] = [];
  const connect = async (url: string) => {
    // Without INFO (renamed away, as some managed services do) ioredis's ready check cannot run.
    const r = url === noInfo?.url ? new Redis(url, { enableReadyCheck: false, maxRetriesPerRequest: 1 }) : createProducerRedis(url);
    connections.push(r);
    await waitForRedis(r);
    return r;
  };

  before(async () => {
    lru = await startPrivateRedis(['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru']);
    noInfo = await startPrivateRedis(['--rename-command', 'INFO', '']);
  });
  after(async () => {
    for (const r of connections) r.disconnect();
    await lru?.stop();
    await noInfo?.stop();
  });

  it('reads the policy from INFO memory', async () => {
    expect(await readEvictionPolicy(await connect(lru.url))).to.deep.equal({ policy: 'allkeys-lru', fit: 'evicts' });
    expect(await readEvictionPolicy(await connect(noInfo.url))).to.deep.equal({ policy: null, fit: 'unknown' });
  });

  it('/health stays 200 with an evicting Redis and shows a degraded check in its body', async () => {
    const { app } = buildTestApp({ redis: await connect(lru.url) });
    const res = await request(app).get('/health');
    expect(res.status).to.equal(200);
    expect(res.body.status).to.equal('degraded');
    expect(res.body.checks).to.include({ database: 'ok', redis: 'ok', redisEviction: 'degraded' });
    const unknown = await request(buildTestApp({ redis: await connect(noInfo.url) }).app).get('/health');
    expect(unknown.status).to.equal(200);
    expect(unknown.body.checks.redisEviction).to.equal('unknown');
  });

  it('outside NETWORK=local refuses unless ALLOW_REDIS_EVICTION=true; on local it is an error line; unknown is a warning', async () => {
    const redis = await connect(lru.url);
    const memory = newPlatformMemory();
    let refused: unknown = null;
    await checkRedisFitForQueues(redis, { config: { network: 'mainnet', allowRedisEviction: false }, logger: testLogger(), memory }).catch((e) => (refused = e));
    expect(refused).to.be.instanceOf(ConfigError);
    expect((refused as Error).message).to.match(/maxmemory-policy is allkeys-lru.*ALLOW_REDIS_EVICTION=true/);

    const before = capturedLogLines.length;
    expect((await checkRedisFitForQueues(redis, { config: { network: 'local', allowRedisEviction: false }, logger: testLogger(), memory })).fit).to.equal('evicts');
    const lines = capturedLogLines.slice(before).map((l) => JSON.parse(l));
    expect(lines.some((l) => l.level === 'error' && l.maxmemoryPolicy === 'allkeys-lru' && /evict/.test(l.msg))).to.equal(true);
    expect((await checkRedisFitForQueues(redis, { config: { network: 'mainnet', allowRedisEviction: true }, logger: testLogger(), memory })).fit).to.equal('evicts');

    // Logged once per context (the API and workers of npm start share one): another context logs it again.
    const evictionErrors = (from: number) => capturedLogLines.slice(from).map((l) => JSON.parse(l)).filter((l) => l.level === 'error' && l.maxmemoryPolicy === 'allkeys-lru');
    const beforeRepeat = capturedLogLines.length;
    await checkRedisFitForQueues(redis, { config: { network: 'local', allowRedisEviction: false }, logger: testLogger(), memory });
    expect(evictionErrors(beforeRepeat)).to.have.length(0);
    await checkRedisFitForQueues(redis, { config: { network: 'local', allowRedisEviction: false }, logger: testLogger(), memory: newPlatformMemory() });
    expect(evictionErrors(beforeRepeat)).to.have.length(1);

    const beforeUnknown = capturedLogLines.length;
    expect((await checkRedisFitForQueues(await connect(noInfo.url), { config: { network: 'mainnet', allowRedisEviction: false }, logger: testLogger(), memory })).fit).to.equal('unknown');
    const warned = capturedLogLines.slice(beforeUnknown).map((l) => JSON.parse(l));
    expect(warned.some((l) => l.level === 'warn' && /maxmemory_policy/.test(l.msg))).to.equal(true);
  });

  it('a worker process on mainnet with an evicting Redis does not start, saying why', async () => {
    const proc = spawnEntry('workers/main.ts', {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: lru.url,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}ev`,
      NETWORK: 'mainnet',
      SECRET_ENCRYPTION_KEY: 'cd'.repeat(32),
      PUBLIC_BASE_URL: 'https://pay.example.com',
      LOG_LEVEL: 'info',
    });
    const code = await proc.exited;
    expect(code).to.equal(1);
    expect(proc.stderr()).to.match(/maxmemory-policy is allkeys-lru/);
    expect(proc.stdout()).to.not.match(/workers started/);
  });
});
