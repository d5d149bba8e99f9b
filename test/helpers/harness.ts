import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { createApp, type App } from '../../api/app';
import { createKeyCache, type ApiDeps } from '../../api/deps';
import { ChainRegistry } from '../../core/chains/registry';
import { ManualClock, type Clock } from '../../core/clock';
import { loadConfig, type Config } from '../../core/config';
import type { ServiceContext } from '../../core/context';
import { createLogger, type Logger } from '../../core/logger';
import { createOrganization, createApiKey } from '../../core/organizations';
import { createProducerRedis, deleteKeysWithPrefix } from '../../core/redis';
import type { Role } from '../../core/roles';
import { createDb, type DbHandle } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { closeQueues, createQueues, type Queues } from '../../core/jobs/catalog';
import { bullJobQueue } from '../../core/jobs/bullmq-job-queue';
import type { JobQueue } from '../../core/jobs/job-queue';

/**
 * One test run = one fresh database and one Redis key prefix, removed at the end (root hooks).
 * Tests use the real Postgres and Redis of the machine, never mocks.
 */
const RUN_ID = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const BASE_DB_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export const TEST_DB_NAME = `sg_test_${RUN_ID}`;
export const TEST_DATABASE_URL = (() => {
  const u = new URL(BASE_DB_URL);
  u.pathname = `/${TEST_DB_NAME}`;
  return u.toString();
})();
export const TEST_REDIS_PREFIX = `sgt_${RUN_ID}`;
export const TEST_REDIS_URL = REDIS_URL;

/** Every log line written by any app or worker built in this run (tests grep them for secrets). */
export const capturedLogLines: string[] = [];
/** Secrets handed out during the run (API keys, webhook secrets); test/zz-logs checks none was logged. */
export const knownSecrets = new Set<string>();
const captureStream = new Writable({
  write(chunk, _enc, cb) {
    const text = chunk.toString();
    capturedLogLines.push(text);
    if (process.env.TEST_LOGS) process.stdout.write(text);
    cb();
  },
});

export function testLogger(): Logger {
  return createLogger('debug', captureStream);
}

/** Configuration for tests: the run's database and prefix, rate limits off unless asked. */
export function testConfig(env: Record<string, string> = {}, overrides: Partial<Config> = {}): Config {
  return loadConfig(
    {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL,
      REDIS_PREFIX: TEST_REDIS_PREFIX,
      NETWORK: 'local',
      RATE_LIMIT_ENABLED: 'false',
      LOG_LEVEL: 'debug',
      PORT: '0',
      ...env,
    },
    overrides,
  );
}

interface Shared {
  dbHandle: DbHandle;
  redis: Redis;
  queues: Queues;
}
let shared: Shared | null = null;

export async function setUpTestRun(): Promise<void> {
  await runMigrations(TEST_DATABASE_URL);
}

export async function tearDownTestRun(): Promise<void> {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
  if (shared) {
    await closeQueues(shared.queues).catch(() => {});
    await deleteKeysWithPrefix(shared.redis, TEST_REDIS_PREFIX).catch(() => {});
    shared.redis.disconnect();
    await shared.dbHandle.close();
    shared = null;
  }
  if (!process.env.KEEP_TEST_DB) {
    const admin = postgres(BASE_DB_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${TEST_DB_NAME}" with (force)`);
    await admin.end();
  }
}

const cleanups: (() => Promise<void>)[] = [];
/** Registers something to close at the end of the run. */
export function onTearDown(fn: () => Promise<void>): void {
  cleanups.push(fn);
}

/** Connections are made lazily (suites build apps at load time); queries run after set-up. */
function requireShared(): Shared {
  if (!shared) {
    const redis = createProducerRedis(REDIS_URL);
    shared = { dbHandle: createDb(TEST_DATABASE_URL, { max: 20 }), redis, queues: createQueues(redis, TEST_REDIS_PREFIX) };
  }
  return shared;
}

export function testDb() {
  return requireShared().dbHandle.db;
}
export function testSql() {
  return requireShared().dbHandle.sql;
}
export function testRedis(): Redis {
  return requireShared().redis;
}
/** The run's job queue port, over the shared queues (opened on first use). */
export function testJobQueue(): JobQueue {
  return {
    enqueue: (queue, data, opts) => bullJobQueue(requireShared().queues).enqueue(queue, data, opts),
    enqueueWebhookDeliveries: (jobs, opts) => bullJobQueue(requireShared().queues).enqueueWebhookDeliveries(jobs, opts),
  };
}

/** A service context over the run's database; each gets its own registry and (movable) clock. */
export function testContext(config: Config = testConfig(), clock: Clock = new ManualClock()): ServiceContext {
  return { config, db: testDb(), registry: ChainRegistry.forNetwork(config.network, config.chainOverrides), clock, logger: testLogger(), jobs: testJobQueue() };
}

export interface TestApp {
  app: App;
  deps: ApiDeps;
  config: Config;
  clock: ManualClock;
}

/** Builds an app (not listening) in a given style with given settings; several can coexist. */
export function buildTestApp(options: { style?: 'a' | 'b'; env?: Record<string, string>; overrides?: Partial<Config>; clock?: ManualClock; redis?: Redis; db?: ServiceContext['db'] } = {}): TestApp {
  const config = testConfig({ API_STYLE: options.style ?? 'b', ...(options.env ?? {}) }, options.overrides);
  const clock = options.clock ?? new ManualClock();
  const { redis, queues } = requireShared();
  const ctx = { ...testContext(config, clock), ...(options.db ? { db: options.db } : {}) };
  const keyCache = createKeyCache(ctx);
  onTearDown(() => keyCache.close());
  const deps: ApiDeps = { ...ctx, redis: options.redis ?? redis, queues, jobs: bullJobQueue(queues), keyCache };
  return { app: createApp(config, deps), deps, config, clock };
}

export interface TestOrg {
  organizationId: string;
  ownerKey: string;
  keys: Record<Role, string>;
}

/** A fresh organization with one key of every role. */
export async function createTestOrg(name = 'Test org'): Promise<TestOrg> {
  const db = testDb();
  const { organizationId, ownerKey } = await createOrganization(db, name);
  const owner = { organizationId, keyId: ownerKey.id, role: 'owner' as const };
  const keys = { owner: ownerKey.key } as Record<Role, string>;
  for (const role of ['admin', 'member', 'viewer'] as const) {
    keys[role] = (await createApiKey(db, owner, organizationId, { name: `${role} key`, role })).key;
  }
  for (const key of Object.values(keys)) knownSecrets.add(key);
  return { organizationId, ownerKey: ownerKey.key, keys };
}

export const STYLES = ['a', 'b'] as const;
