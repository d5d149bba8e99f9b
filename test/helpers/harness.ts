import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { createApp, type App } from '../../api/app';
import { PaymentPageCache, listenForPaymentPageChanges } from '../../core/orders/payment-page-cache';
import { createKeyCache, type ApiDeps } from '../../api/deps';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { ManualClock, type Clock } from '../../core/platform/clock';
import { loadConfig, type Config } from '../../core/platform/config';
import type { ServiceContext } from '../../core/service/context';
import { DetectionState } from '../../core/service/detection-state';
import { newProcessMemory } from '../../core/service/process-memory';
import { createLogger, type Logger } from '../../core/platform/logger';
import { createOrganization, createApiKey } from '../../core/organizations/organizations';
import { createProducerRedis, deleteKeysWithPrefix } from '../../core/platform/redis';
import type { Role } from '../../core/organizations/roles';
import { drizzle } from 'drizzle-orm/postgres-js';
import { createDb, type DbHandle } from '../../db/client';
import * as schema from '../../db/schema';
import { runMigrations } from '../../db/migrate';
import { closeQueues, createQueues, type Queues } from '../../core/jobs/catalog';
import { bullJobQueue } from '../../core/jobs/bullmq-job-queue';
import type { JobQueue } from '../../core/jobs/job-queue';

/**
 * One database per test file, cloned (CREATE DATABASE … TEMPLATE) from one template migrated at the
 * start of the run, so no file sees another's rows and file order never matters; one Redis key
 * prefix for the run. Everything is removed at the end (root hooks, test/helpers/root-hooks.ts).
 * Tests use the real Postgres and Redis of the machine, never mocks.
 */
const RUN_ID = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const BASE_DB_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function databaseUrl(name: string): string {
  const u = new URL(BASE_DB_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Migrated once per run; every test file's database is a copy of it. Nothing connects to it after. */
export const TEMPLATE_DB_NAME = `sg_test_${RUN_ID}_template`;
/**
 * The current test file's database (name and URL). Both change from file to file: read them in
 * hooks and tests. Read while the files load (describe bodies) they name a database of the run
 * that is never created, a base for names of databases a test makes itself (`${TEST_DATABASE_URL}_x`).
 */
export let TEST_DB_NAME = `sg_test_${RUN_ID}`;
export let TEST_DATABASE_URL = databaseUrl(TEST_DB_NAME);
export const TEST_REDIS_PREFIX = `sgt_${RUN_ID}`;
export const TEST_REDIS_URL = REDIS_URL;

/** Every log line written by any app or worker built in this run (tests grep them for secrets). */
export const capturedLogLines: string[] = [];
/** Secrets handed out during the run (API keys, webhook secrets); checkLogLines checks none was logged. */
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
      METRICS_PORT: '0',
      // Tests pause mining and move the clock on purpose: a chain stall is tested where it is meant.
      CHAIN_STALL_ALERT_SECONDS: '86400',
      ...env,
    },
    overrides,
  );
}

interface Shared {
  /** Over the current file's database, whichever file that is (see switchableSql). */
  dbHandle: DbHandle;
  redis: Redis;
  /** The apps' page limiter connection, auto-pipelined as in api/server.ts. */
  pageLimitRedis: Redis;
  queues: Queues;
}
let shared: Shared | null = null;

/** The current file's own connections, and the file it belongs to. */
let fileDb: { file: string; name: string; handle: DbHandle; logMark: number } | null = null;
let admin: postgres.Sql | null = null;
const adminSql = () => (admin ??= postgres(BASE_DB_URL, { max: 1, onnotice: () => {} }));
let fileCount = 0;
/** The next file's database, created while the current file runs (a copy takes ~0.2 s). */
let nextDatabase: Promise<string> | null = null;
const drops: Promise<unknown>[] = [];

export async function setUpTestRun(): Promise<void> {
  await runMigrations(databaseUrl(TEMPLATE_DB_NAME));
}

function cloneTemplate(): Promise<string> {
  const name = `sg_test_${RUN_ID}_${++fileCount}`;
  return adminSql()
    .unsafe(`create database "${name}" template "${TEMPLATE_DB_NAME}"`)
    .then(() => name);
}

/**
 * Before a test file's first suite (root hooks): its own database, a copy of the template. Apps,
 * contexts and testDb() built while the files loaded use it from here on.
 */
export async function setUpTestFile(file: string): Promise<void> {
  if (fileDb?.file === file) return;
  await tearDownTestFile();
  const name = await (nextDatabase ?? cloneTemplate());
  nextDatabase = cloneTemplate();
  // Not left unhandled if the run ends first; a failure surfaces when the next file awaits it.
  nextDatabase.catch(() => {});
  TEST_DB_NAME = name;
  TEST_DATABASE_URL = databaseUrl(name);
  fileDb = { file, name, handle: createDb(TEST_DATABASE_URL, { max: 20 }), logMark: capturedLogLines.length };
}

/**
 * After a test file's last suite: checks the log lines written during the file (no secret), closes
 * its connections and drops its database (in the background; the run's end waits for it).
 */
export async function tearDownTestFile(): Promise<void> {
  if (!fileDb) return;
  const { name, handle, logMark } = fileDb;
  fileDb = null;
  await handle.close();
  if (!process.env.KEEP_TEST_DB) drops.push(adminSql().unsafe(`drop database if exists "${name}" with (force)`));
  checkLogLines(capturedLogLines.slice(logMark));
}

/**
 * The log checks (every app and worker of the run logs into capturedLogLines): each request has one
 * structured line with a request id, and no API key nor any other secret handed out appears.
 */
export function checkLogLines(lines: string[]): void {
  const all = lines.join('');
  const key = /pk_[A-Za-z0-9_-]{40,}/.exec(all);
  if (key) throw new Error(`an API key appears in the logs: ${key[0].slice(0, 8)}…`);
  for (const secret of knownSecrets) {
    if (all.includes(secret)) throw new Error(`a secret (${secret.slice(0, 6)}…) appears in the logs`);
  }
  for (const line of lines) {
    const entry = JSON.parse(line) as { req?: { id?: unknown }; res?: unknown; responseTime?: unknown };
    if (entry.req && entry.res && (typeof entry.req.id !== 'string' || entry.req.id === '' || entry.responseTime === undefined)) {
      throw new Error(`a request log line lacks its request id or response time: ${line.slice(0, 300)}`);
    }
  }
}

export async function tearDownTestRun(): Promise<void> {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
  await tearDownTestFile().catch(() => {});
  if (shared) {
    await closeQueues(shared.queues).catch(() => {});
    await deleteKeysWithPrefix(shared.redis, TEST_REDIS_PREFIX).catch(() => {});
    shared.redis.disconnect();
    shared.pageLimitRedis.disconnect();
    shared = null;
  } else {
    // A run that only spawned processes (their REDIS_PREFIX extends the run's) never made the shared
    // connection: their keys are the run's to delete all the same.
    const redis = createProducerRedis(REDIS_URL);
    // No offline queue on a producer connection: commands wait for it to be ready.
    const ready = new Promise<void>((resolve) => (redis.status === 'ready' ? resolve() : redis.once('ready', () => resolve())));
    await Promise.race([ready, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    await deleteKeysWithPrefix(redis, TEST_REDIS_PREFIX).catch(() => {});
    redis.disconnect();
  }
  const unused = nextDatabase;
  nextDatabase = null;
  await Promise.allSettled(drops.splice(0));
  if (!process.env.KEEP_TEST_DB) {
    const leftover = await unused?.catch(() => null);
    for (const name of [leftover, TEMPLATE_DB_NAME]) {
      if (name) await adminSql().unsafe(`drop database if exists "${name}" with (force)`);
    }
  }
  await admin?.end();
  admin = null;
}

const cleanups: (() => Promise<void>)[] = [];
/** Registers something to close at the end of the run. */
export function onTearDown(fn: () => Promise<void>): void {
  cleanups.push(fn);
}

/**
 * A postgres.js client that forwards every call to the current test file's client. One drizzle
 * database over it serves all files, so a prepared query or cache keyed by the database (built
 * while the files load, or in an earlier file) reaches the current file's database. drizzle sets
 * its type parsers on the client it is given: each file's real client gets them from createDb.
 */
function switchableSql(): postgres.Sql {
  const current = (): postgres.Sql => {
    if (!fileDb) throw new Error('No test database here: query the database in hooks and tests, not while the test files load');
    return fileDb.handle.sql;
  };
  const parsersOfTheWrapper = { parsers: {}, serializers: {} };
  return new Proxy(function switchable() {} as unknown as postgres.Sql, {
    apply: (_target, _this, args: unknown[]) => (current() as unknown as (...a: unknown[]) => unknown)(...args),
    get: (_target, property) => {
      if (property === 'options' && !fileDb) return parsersOfTheWrapper;
      const client = current();
      const value: unknown = Reflect.get(client, property);
      return typeof value === 'function' ? value.bind(client) : value;
    },
  });
}

/** Connections are made lazily (suites build apps at load time); queries run after set-up. */
function requireShared(): Shared {
  if (!shared) {
    const redis = createProducerRedis(REDIS_URL);
    const sql = switchableSql();
    const db = drizzle(sql, { schema });
    const dbHandle: DbHandle = { db, sql, recycle: (reason) => fileDb?.handle.recycle(reason) ?? 0, close: async () => {} };
    const pageLimitRedis = createProducerRedis(REDIS_URL, { autoPipelining: true });
    shared = { dbHandle, redis, pageLimitRedis, queues: createQueues(redis, TEST_REDIS_PREFIX) };
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

/** A service context over the current file's database; each gets its own registry and (movable) clock. */
export function testContext(config: Config = testConfig(), clock: Clock = new ManualClock()): ServiceContext {
  return { config, db: testDb(), registry: ChainRegistry.forConfig(config, SCANNED_FAMILIES), clock, logger: testLogger(), jobs: testJobQueue(), detection: new DetectionState(), memory: newProcessMemory(config) };
}

export interface TestApp {
  app: App;
  deps: ApiDeps;
  config: Config;
  clock: ManualClock;
}

/** Builds an app (not listening) in a given style with given settings; several can coexist. */
export function buildTestApp(
  options: { style?: 'a' | 'b'; env?: Record<string, string>; overrides?: Partial<Config>; clock?: ManualClock; redis?: Redis; db?: ServiceContext['db']; keyCacheTtlMs?: number } = {},
): TestApp {
  const config = testConfig({ API_STYLE: options.style ?? 'b', ...(options.env ?? {}) }, options.overrides);
  const clock = options.clock ?? new ManualClock();
  const { redis, pageLimitRedis, queues } = requireShared();
  const ctx = { ...testContext(config, clock), ...(options.db ? { db: options.db } : {}) };
  const keyCache = createKeyCache(ctx, { ttlMs: options.keyCacheTtlMs });
  onTearDown(() => keyCache.close());
  // Not listening (so reading Postgres every time) unless a test starts its listener: listenForPageChanges.
  const paymentPages = new PaymentPageCache();
  const deps: ApiDeps = { ...ctx, redis: options.redis ?? redis, pageLimitRedis, queues, jobs: bullJobQueue(queues), keyCache, paymentPages };
  return { app: createApp(config, deps), deps, config, clock };
}

/** Turns on a test app's memory of open orders' payment pages, as startApi does (closed at tear-down). */
export async function listenForPageChanges(t: TestApp, options: { databaseUrl?: string; deadlineMs?: number } = {}): Promise<void> {
  const target = { databaseUrl: options.databaseUrl ?? TEST_DATABASE_URL, db: t.deps.db };
  const listener = await listenForPaymentPageChanges(target, t.deps.paymentPages, testLogger(), { deadlineMs: options.deadlineMs });
  onTearDown(() => listener.close());
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
