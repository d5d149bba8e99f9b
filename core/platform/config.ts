import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';
import { Kind, Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/**
 * The one place that reads the environment. Everything else receives a `Config`.
 * Validation happens once, at start-up, against the environment's schema (ENVIRONMENT below), and
 * reports every problem in one message.
 */

export type ApiStyle = 'a' | 'b';
export type NetworkName = 'local' | 'testnet' | 'mainnet';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface RateLimitConfig {
  enabled: boolean;
  perMinute: number;
  perHour: number;
  perDay: number;
}

export interface WebhookConfig {
  allowInsecure: boolean;
  timeoutMs: number;
  /** Delays in milliseconds between attempts: attempt n+1 waits retryScheduleMs[n]. */
  retryScheduleMs: number[];
  /** Jitter as a fraction of each delay (0.1 = ±10%). */
  retryJitter: number;
  /** An endpoint failing continuously for this long is disabled. */
  disableAfterMs: number;
  /** A delivery due for this long without being attempted is re-enqueued by the relay (its job was lost). */
  requeueAfterMs: number;
  /**
   * WEBHOOK_FAST_PATH: worker processes running the relay LISTEN for committed events and fan them
   * out at once (one dedicated connection, counted in DATABASE_POOL_SIZE); off, events wait for the relay.
   */
  fastPath: boolean;
}

export interface Config {
  databaseUrl: string;
  /** DATABASE_POOL_SIZE: connections each process keeps to PostgreSQL; null: by kind (databasePoolSizeFor). */
  databasePoolSize: number | null;
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: seed nodes of a Redis Cluster (redis:// URLs); null: one Redis at REDIS_URL. */
  redisClusterNodes: string[] | null;
  /** Prefix of every Redis key (queues, rate limits); tests use a fresh one per run. */
  redisPrefix: string;
  port: number;
  /**
   * SHUTDOWN_TIMEOUT_MS: how long a process drains after SIGTERM (in-flight requests and jobs, kept-alive
   * connections told to close) before it force-closes what is left; below the orchestrator's grace period.
   */
  shutdownTimeoutMs: number;
  /**
   * DATABASE_REQUEST_TIMEOUT_MS: how long an HTTP request waits for the database (a connection, a
   * statement) before it is answered 503 with Retry-After; an outage is answered fast, not after 10 s.
   */
  databaseRequestTimeoutMs: number;
  /**
   * DATABASE_WORKER_TIMEOUT_MS: how long a worker's database call waits for an answer before its
   * connection is dropped and the job fails (to be retried); statements time out server-side a
   * little earlier (db/connection-deadline.ts). The API's bound is DATABASE_REQUEST_TIMEOUT_MS.
   */
  databaseWorkerTimeoutMs: number;
  /**
   * DATABASE_MAINTENANCE_TIMEOUT_MS: the same bound for the statements known to be long, on a
   * connection of their own: migrations, VACUUM, detaching and dropping history partitions.
   */
  databaseMaintenanceTimeoutMs: number;
  apiStyle: ApiStyle;
  network: NetworkName;
  publicBaseUrl: string;
  logLevel: LogLevel;
  /** 32-byte key for secrets encrypted at rest (webhook secrets). */
  secretEncryptionKey: Buffer;
  /** True when the development default key is in use (start-up warns). */
  secretEncryptionKeyIsDefault: boolean;
  operator: { user: string; password: string } | null;
  rateLimit: RateLimitConfig;
  bodyLimitBytes: number;
  importBodyLimitBytes: number;
  /** Queues this worker process consumes; 'all' or a list of queue names. */
  workerQueues: 'all' | string[];
  dataDir: string;
  /**
   * CHAINS_FILE: the operator's chains file (YAML or JSON; core/chains/chains-file.ts), an absolute
   * path; null: the built-in chains only. Read and checked when a process builds its chain registry.
   */
  chainsFile: string | null;
  /** Per-chain overrides: RPC_URLS_<CHAIN>, TOKEN_<CHAIN>_<CURRENCY>, CONFIRMATIONS_<CHAIN>, EXPLORER_TX_URL_<CHAIN>, ATTRIBUTION_SKEW_SECONDS_<CHAIN>, HEAD_LAG_SECONDS(_<CHAIN>), CLOCK_WITNESS_SECONDS_<CHAIN>. */
  chainOverrides: Record<string, string>;
  webhooks: WebhookConfig;
  /**
   * A chain whose checkpoint (while its head moves) or head has not advanced for this long, or whose
   * providers have all failed that long, is stalled: alert.chain_stalled and /health (CHAIN_STALL_ALERT_SECONDS).
   */
  chainStallAlertMs: number;
  /**
   * HEAD_LOOK_ALERT_AFTER_SECONDS: no look at a chain's head for this long while addresses of it
   * are handed out is a gap: a warn line, /health's chainLooks and alert.chain_stalled with reason
   * looks_stopped (core/detection/head-look-gaps.ts).
   */
  headLookAlertMs: number;
  /** Poll intervals of the repeatable jobs, in milliseconds. */
  intervals: {
    chainScanMs: number;
    confirmationsMs: number;
    orderExpiryMs: number;
    poolCooldownMs: number;
    poolLowCheckMs: number;
    webhookRelayMs: number;
    idempotencyCleanupMs: number;
    tableMaintenanceMs: number;
    alertEmailMs: number;
    /** The history-partitions job: months created ahead, expired months dropped. */
    historyPartitionsMs: number;
    /** Each worker's own timer (not a job): missing job schedulers re-created, chain stalls judged. */
    scheduleWatchMs: number;
    /** Each process's own timer (API and workers, not a job): a look at every chain's head (core/detection/head-looks.ts). */
    headLookMs: number;
  };
  maintenance: {
    /** A queue-like table is vacuumed once it has this many dead rows (core/maintenance). */
    vacuumMinDeadRows: number;
  };
  /** History retention (core/maintenance/history-retention.ts): RETENTION_*. */
  retention: {
    /** Delivered events, with their deliveries and attempts, older than this go; 0 keeps them. */
    eventDays: number;
    intervalMs: number;
    batchSize: number;
    maxBatchesPerRun: number;
  };
  /**
   * TRUST_PROXY: which peers may tell us the client's IP in X-Forwarded-For (Express's
   * 'trust proxy'): false = none (the socket's address is the client), a hop count, or addresses/CIDRs.
   */
  trustProxy: false | number | string[];
  /** Public pages (payment page): per-client-IP limit and who may frame them. */
  pages: {
    /** PAGE_RATE_LIMIT_PER_MINUTE: requests per minute per client IP on /pay/… (pages and status). */
    rateLimitPerMinute: number;
    /** PAGE_FRAME_ANCESTORS: CSP frame-ancestors sources; `'none'` by default. */
    frameAncestors: string;
  };
  /** The merchant dashboard's sessions (issue 29). */
  dashboard: {
    /** DASHBOARD_SESSION_IDLE_MINUTES: a session unused this long ends. */
    sessionIdleMs: number;
    /** DASHBOARD_SESSION_MAX_HOURS: a session ends this long after sign-in, however active. */
    sessionAbsoluteMs: number;
    /** Secure cookies everywhere but NETWORK=local (plain http on a developer's machine). */
    secureCookies: boolean;
    /** OWNER_EMAIL: the dashboard user the first start makes Owner of the organization it creates. */
    firstOwnerEmail: string;
  };
  /** Anonymous writes of the public pages (the public write kit, api/pages/public-write/). */
  publicWrites: {
    /** PUBLIC_WRITE_BODY_LIMIT_BYTES: largest form or JSON body an anonymous POST may send. */
    bodyLimitBytes: number;
  };
  /**
   * The payment links' public checkout (POST /l/<slug>/orders): its budgets in Redis and the part
   * of each pool an anonymous checkout never takes (README, Payment links: drain protections).
   */
  checkout: {
    /** CHECKOUT_ORDERS_PER_IP per CHECKOUT_IP_WINDOW_SECONDS: new orders one client IP may make. */
    ordersPerIp: number;
    ipWindowSeconds: number;
    /** CHECKOUT_ORDERS_PER_LINK_PER_MINUTE: new orders one link may make per minute, all visitors together. */
    ordersPerLinkPerMinute: number;
    /** CHECKOUT_POOL_RESERVE_PERCENT / _MIN: free addresses a checkout leaves (the larger of the two). */
    poolReservePercent: number;
    poolReserveMin: number;
  };
  /** Start a local anvil chain with `npm start` (NETWORK=local only). */
  startLocalChain: boolean;
  /** LOCAL_CHAIN_PORT: anvil's port (unset: a free port with `npm start`, 8545 with `npm run chain`). */
  localChainPort: number | null;
  /** tron-local (NETWORK=local): port (unset: free with `npm start`, 8090 with `npm run chain`), block time, solidification lag. */
  tronLocal: { port: number | null; blockTimeMs: number; solidificationLag: number };
  /** solana-local (NETWORK=local): port (unset: free with `npm start`, 8899 with `npm run chain`), slot interval, finalization lag in blocks. */
  solanaLocal: { port: number | null; slotMs: number; finalizationLag: number };
  /** ALLOW_INSECURE_PUBLIC_URL: an http:// PUBLIC_BASE_URL outside NETWORK=local was accepted on purpose. */
  allowInsecurePublicUrl: boolean;
  metrics: MetricsConfig;
  /** Alert e-mails; null when SMTP_URL is not set (alerts then go by webhook only). */
  smtp: SmtpConfig | null;
  alertEmailsPerHour: number;
  /** ALLOW_REDIS_EVICTION: start outside NETWORK=local although Redis may evict keys (queues would lose jobs). */
  allowRedisEviction: boolean;
}

export interface MetricsConfig {
  /** Port of the Prometheus endpoint (GET /metrics), never the API's port; 0 = a free port. */
  port: number;
  /** METRICS_PORT was not set: on NETWORK=local a busy default port falls back to a free one. */
  portIsDefault: boolean;
  /** Bearer token; when set the endpoint listens on every interface, else on 127.0.0.1 only. */
  token: string | null;
  /** Pool availability per organization as well as per protocol (one series per organization). */
  perOrganization: boolean;
}

export interface SmtpConfig {
  url: string;
  from: string;
}

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/**
 * Database connections per process when DATABASE_POOL_SIZE is not set. An API process answers
 * with short statements, which postgres.js pipelines on busy connections, so a few connections
 * serve many requests; more only add backends contending for the same index pages and CPU
 * (bench:orders; the figures are in scripts/bench/FINDINGS.md). A worker process runs jobs that hold a transaction across chain RPC calls (chain-scan,
 * 4 at a time) and keeps ten. The API's six are five for queries and the payment pages' LISTEN
 * connection (dedicatedConnectionsFor).
 */
export const DEFAULT_DATABASE_POOL_SIZE = { api: 6, worker: 10 } as const;
export type ProcessKind = keyof typeof DEFAULT_DATABASE_POOL_SIZE;

/** The connections a process of this kind keeps: DATABASE_POOL_SIZE, else the kind's default. */
export function databasePoolSizeFor(config: Pick<Config, 'databasePoolSize'>, kind: ProcessKind): number {
  return config.databasePoolSize ?? DEFAULT_DATABASE_POOL_SIZE[kind];
}

/**
 * Connections of a process held outside its query pool: a worker's LISTEN connection for the
 * webhook fast path (workers/event-listener.ts), an API's for the payment pages' memory of open
 * orders (core/orders/payment-page-cache.ts). The query pool is the rest of DATABASE_POOL_SIZE.
 */
export function dedicatedConnectionsFor(config: Pick<Config, 'webhooks'>, kind: ProcessKind): number {
  return kind === 'worker' ? (config.webhooks.fastPath ? 1 : 0) : 1;
}

/** The query pool's size: DATABASE_POOL_SIZE (or the kind's default) less the dedicated connections. */
export function queryPoolSizeFor(config: Pick<Config, 'databasePoolSize' | 'webhooks'>, kind: ProcessKind): number {
  return Math.max(1, databasePoolSizeFor(config, kind) - dedicatedConnectionsFor(config, kind));
}

const DEV_ENCRYPTION_KEY: Buffer = Buffer.from('stablegate-local-development-key').subarray(0, 32);

export const DEFAULT_WEBHOOK_SCHEDULE_SECONDS = [
  0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400,
];

/** The Prometheus endpoint's port when METRICS_PORT is not set (the OpenTelemetry exporter's). */
export const DEFAULT_METRICS_PORT = 9464;

/*
 * The environment's schema: every variable the service reads, with its type, bounds and default,
 * in one TypeBox object. A value is trimmed (blank counts as unset), converted by its schema's kind
 * (integers and numbers by Number(), booleans from true/1/yes/on and false/0/no/off, one-of
 * choices lowercased) and checked against its schema (Value.Check); each kind states its own
 * problem. A variable without a default is undefined when unset; one whose default depends on
 * another variable (RATE_LIMIT_ENABLED on API_STYLE, the local conveniences on NETWORK) takes it in
 * loadConfig. Variables of text shape (`text()`: keys, lists, URLs with a rule of their own) are
 * handed over as written and parsed by the functions named beside them; per-chain variables
 * (NAME_<CHAIN>) are the families in CHAIN_VARIABLE_FAMILIES.
 */
interface EnvOptions {
  /** url(): the URL schemes accepted. */
  protocols?: string[];
  /** pattern(): what the value must be, for the problem's text. */
  mustBe?: string;
  /** text(): passed as written (untrimmed, blank included) to the parser named in loadConfig. */
  asWritten?: boolean;
}

const int = (minimum: number, maximum: number, fallback: number) => Type.Integer({ minimum, maximum, default: fallback });
/** An integer that may be unset (no default: undefined). */
const optionalInt = (minimum: number, maximum: number) => Type.Optional(Type.Integer({ minimum, maximum }));
const num = (minimum: number, maximum: number, fallback: number) => Type.Number({ minimum, maximum, default: fallback });
const bool = (fallback: boolean) => Type.Boolean({ default: fallback });
/** A boolean whose default depends on another variable (set in loadConfig). */
const optionalBool = () => Type.Optional(Type.Boolean());
const oneOf = <const T extends string>(allowed: readonly T[], fallback: NoInfer<T>) => Type.Union(allowed.map((a) => Type.Literal(a)), { default: fallback });
const url = (protocols: string[], fallback: string) => Type.String({ default: fallback, protocols });
const pattern = (re: RegExp, mustBe: string, fallback: string) => Type.String({ pattern: re.source, default: fallback, mustBe });
const text = () => Type.Optional(Type.String({ asWritten: true } satisfies EnvOptions));

const ENVIRONMENT = Type.Object({
  NETWORK: oneOf(['local', 'testnet', 'mainnet'], 'local'),
  API_STYLE: oneOf(['a', 'b'], 'b'),
  PORT: int(0, 65535, 3000),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  /** 32 bytes, hex or base64 (decodeKey); required outside NETWORK=local. */
  SECRET_ENCRYPTION_KEY: text(),
  OPERATOR_USER: text(),
  OPERATOR_PASSWORD: text(),
  PUBLIC_BASE_URL: text(),
  ALLOW_INSECURE_PUBLIC_URL: bool(false),
  DATA_DIR: text(),
  /** A YAML or JSON file of chains and tokens added or turned off (core/chains/chains-file.ts). */
  CHAINS_FILE: text(),

  DATABASE_URL: url(['postgres:', 'postgresql:'], 'postgres://postgres@127.0.0.1:5432/stablegate'),
  DATABASE_POOL_SIZE: optionalInt(2, 200),
  DATABASE_REQUEST_TIMEOUT_MS: int(100, 120_000, 3000),
  DATABASE_WORKER_TIMEOUT_MS: int(1000, 600_000, 30_000),
  DATABASE_MAINTENANCE_TIMEOUT_MS: int(1000, 86_400_000, 1_800_000),
  REDIS_URL: url(['redis:', 'rediss:'], 'redis://127.0.0.1:6379'),
  /** parseRedisClusterNodes. */
  REDIS_CLUSTER_NODES: text(),
  REDIS_PREFIX: pattern(/^[A-Za-z0-9_-]{1,40}$/, 'letters, digits, _ or -', 'sg'),
  ALLOW_REDIS_EVICTION: bool(false),
  SHUTDOWN_TIMEOUT_MS: int(1000, 600_000, 20_000),

  RATE_LIMIT_ENABLED: optionalBool(),
  RATE_LIMIT_PER_MINUTE: int(1, 10_000_000, 100),
  RATE_LIMIT_PER_HOUR: int(1, 100_000_000, 1000),
  RATE_LIMIT_PER_DAY: int(1, 1_000_000_000, 10000),
  BODY_LIMIT_BYTES: int(1024, 50 * 1024 * 1024, 100 * 1024),
  IMPORT_BODY_LIMIT_BYTES: int(1024, 512 * 1024 * 1024, 32 * 1024 * 1024),
  /** parseTrustProxy. */
  TRUST_PROXY: text(),
  /** 'all' or queue names separated by commas. */
  WORKER_QUEUES: text(),

  WEBHOOK_ALLOW_INSECURE: optionalBool(),
  WEBHOOK_TIMEOUT_MS: int(100, 120_000, 15_000),
  /** Seconds separated by commas. */
  WEBHOOK_RETRY_SCHEDULE: text(),
  WEBHOOK_RETRY_JITTER: num(0, 1, 0.1),
  WEBHOOK_DISABLE_AFTER_HOURS: int(1, 24 * 365, 72),
  WEBHOOK_REQUEUE_AFTER_MS: int(100, 3600_000, 30_000),
  WEBHOOK_FAST_PATH: bool(true),

  CHAIN_SCAN_INTERVAL_MS: int(50, 3600_000, 1000),
  CONFIRMATIONS_INTERVAL_MS: int(50, 3600_000, 1000),
  ORDER_EXPIRY_INTERVAL_MS: int(50, 3600_000, 5000),
  POOL_COOLDOWN_INTERVAL_MS: int(50, 3600_000, 30_000),
  POOL_LOW_CHECK_INTERVAL_MS: int(50, 3600_000, 60_000),
  WEBHOOK_RELAY_INTERVAL_MS: int(50, 3600_000, 2000),
  IDEMPOTENCY_CLEANUP_INTERVAL_MS: int(50, 86_400_000, 3600_000),
  TABLE_MAINTENANCE_INTERVAL_MS: int(50, 86_400_000, 60_000),
  ALERT_EMAIL_INTERVAL_MS: int(50, 3600_000, 10_000),
  HISTORY_PARTITIONS_INTERVAL_MS: int(50, 86_400_000, 3600_000),
  SCHEDULE_WATCH_INTERVAL_MS: int(100, 600_000, 10_000),
  HEAD_LOOK_INTERVAL_MS: int(100, 60_000, 1000),
  VACUUM_MIN_DEAD_ROWS: int(1, 100_000_000, 5000),
  RETENTION_EVENT_DAYS: int(0, 36_500, 90),
  RETENTION_INTERVAL_MS: int(50, 86_400_000, 600_000),
  RETENTION_BATCH_SIZE: int(1, 50_000, 1000),
  RETENTION_MAX_BATCHES_PER_RUN: int(1, 100_000, 100),
  CHAIN_STALL_ALERT_SECONDS: int(10, 7 * 86_400, 300),
  HEAD_LOOK_ALERT_AFTER_SECONDS: int(1, 86_400, 30),

  PAGE_RATE_LIMIT_PER_MINUTE: int(1, 100_000_000, 300),
  PAGE_FRAME_ANCESTORS: pattern(/^[A-Za-z0-9 :/.*'_-]{1,500}$/, "CSP sources separated by spaces, e.g. 'self' https://shop.example", "'none'"),
  DASHBOARD_SESSION_IDLE_MINUTES: int(1, 7 * 24 * 60, 30),
  DASHBOARD_SESSION_MAX_HOURS: int(1, 30 * 24, 12),
  OWNER_EMAIL: text(),
  PUBLIC_WRITE_BODY_LIMIT_BYTES: int(256, 1024 * 1024, 8 * 1024),
  CHECKOUT_ORDERS_PER_IP: int(1, 100_000_000, 10),
  CHECKOUT_IP_WINDOW_SECONDS: int(1, 86_400, 3600),
  CHECKOUT_ORDERS_PER_LINK_PER_MINUTE: int(1, 100_000_000, 60),
  CHECKOUT_POOL_RESERVE_PERCENT: int(0, 99, 20),
  CHECKOUT_POOL_RESERVE_MIN: int(0, 1_000_000, 5),

  START_LOCAL_CHAIN: optionalBool(),
  LOCAL_CHAIN_PORT: optionalInt(0, 65535),
  TRON_LOCAL_PORT: optionalInt(0, 65535),
  TRON_LOCAL_BLOCK_TIME_MS: int(0, 600_000, 3000),
  TRON_LOCAL_SOLIDIFICATION_LAG: int(0, 1000, 2),
  SOLANA_LOCAL_PORT: optionalInt(0, 65535),
  SOLANA_LOCAL_SLOT_MS: int(0, 600_000, 400),
  SOLANA_LOCAL_FINALIZATION_LAG: int(1, 1000, 32),

  METRICS_PORT: int(0, 65535, DEFAULT_METRICS_PORT),
  METRICS_TOKEN: text(),
  METRICS_PER_ORG: bool(false),
  SMTP_URL: url(['smtp:', 'smtps:'], ''),
  SMTP_FROM: text(),
  ALERT_EMAILS_PER_HOUR: int(1, 10_000, 10),
});

type EnvValues = Static<typeof ENVIRONMENT>;

/** Every variable of the schema, by name (.env.example lists each: test/ops/cli.test.ts). */
export const ENVIRONMENT_VARIABLES: readonly string[] = Object.keys(ENVIRONMENT.properties);

/** The variable's value from its text, by its schema's kind; undefined when the text is no such value. */
function convert(schema: TSchema, value: string): unknown {
  switch (schema[Kind]) {
    case 'Integer':
    case 'Number':
      return Number(value);
    case 'Boolean':
      return ['true', '1', 'yes', 'on'].includes(value) ? true : ['false', '0', 'no', 'off'].includes(value) ? false : undefined;
    case 'String': {
      const { protocols } = schema as EnvOptions;
      if (!protocols) return value;
      try {
        return protocols.includes(new URL(value).protocol) ? value : undefined;
      } catch {
        return undefined;
      }
    }
    default:
      return value;
  }
}

/** Choices and booleans are read in any case. */
const readsLowercase = (schema: TSchema) => schema[Kind] === 'Boolean' || schema[Kind] === 'Union';

/** What a variable's value must be, as its problem says it. */
function problemOf(name: string, schema: TSchema, value: string): string {
  switch (schema[Kind]) {
    case 'Integer':
      return `${name} must be an integer from ${schema.minimum} to ${schema.maximum} (got "${value}")`;
    case 'Number':
      return `${name} must be a number from ${schema.minimum} to ${schema.maximum} (got "${value}")`;
    case 'Boolean':
      return `${name} must be true or false (got "${value}")`;
    case 'Union':
      return `${name} must be one of ${(schema.anyOf as { const: string }[]).map((l) => l.const).join(', ')} (got "${value}")`;
    default: {
      const { protocols, mustBe } = schema as EnvOptions;
      return protocols ? `${name} must be a ${protocols.map((p) => p.replace(':', '')).join(' or ')} URL` : `${name} must be ${mustBe}`;
    }
  }
}

/** Every variable of the schema read from `env`: an invalid one is a problem and takes its default. */
function readEnvironment(env: Env, problems: string[]): EnvValues {
  const values: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(ENVIRONMENT.properties) as [string, TSchema][]) {
    if ((schema as EnvOptions).asWritten) {
      values[name] = env[name];
      continue;
    }
    const trimmed = env[name]?.trim();
    if (!trimmed) {
      values[name] = schema.default;
      continue;
    }
    const text = readsLowercase(schema) ? trimmed.toLowerCase() : trimmed;
    const value = convert(schema, text);
    if (value !== undefined && Value.Check(schema, value)) values[name] = value;
    else {
      problems.push(problemOf(name, schema, text));
      values[name] = schema.default;
    }
  }
  return values as EnvValues;
}

/**
 * Per-chain variables, NAME_<CHAIN> (HEAD_LAG_SECONDS also bare): handed to the chain registry as
 * written (core/chains/registry.ts reads them); a family with a rule has its value checked here.
 */
const CHAIN_VARIABLE_FAMILIES: { family: string; valid?: (value: string) => boolean; problem?: (name: string, value: string) => string }[] = [
  { family: 'RPC_URLS' },
  { family: 'RPC_WS_URLS' },
  { family: 'TOKEN' },
  { family: 'CONFIRMATIONS' },
  { family: 'DEPOSIT_CONFIRMATIONS' },
  { family: 'TRON_PRO_API_KEY' },
  { family: 'SOLANA_SCAN_MODE', valid: (v) => ['blocks', 'addresses'].includes(v.trim()), problem: (name, v) => `${name} must be blocks (a dedicated provider or own node) or addresses (public endpoints), got "${v}"` },
  {
    family: 'SOLANA_BLOCKS_PER_REQUEST',
    valid: (v) => /^\d{1,3}$/.test(v.trim()) && Number(v) >= 1 && Number(v) <= 100,
    problem: (name, v) => `${name} must be a whole number from 1 to 100 (getBlock calls per JSON-RPC batch; 1: one plain request per block, for a provider that refuses batches), got "${v}"`,
  },
  { family: 'RPC_REQUESTS_PER_SECOND', valid: (v) => /^\d{1,6}$/.test(v.trim()), problem: (name, v) => `${name} must be a whole number of requests per second per provider (0: unlimited), got "${v}"` },
  { family: 'EXPLORER_TX_URL', valid: (v) => /^https?:\/\/[^/\s]+\S*\{txHash\}/.test(v), problem: (name) => `${name} must be an http(s) URL containing {txHash}, e.g. https://etherscan.io/tx/{txHash}` },
  { family: 'HEAD_LAG_SECONDS', valid: (v) => /^\d{1,3}$/.test(v.trim()), problem: (name, v) => `${name} must be a whole number of seconds from 0 to 999 (got "${v}")` },
  {
    family: 'CLOCK_WITNESS_SECONDS',
    valid: (v) => /^\d{1,3}$/.test(v.trim()),
    problem: (name, v) => `${name} must be a whole number of seconds from 0 (off) to 999: how far the chain's block timestamps may sit from its clock as measured (got "${v}")`,
  },
  { family: 'ATTRIBUTION_SKEW_SECONDS', valid: (v) => /^\d{1,6}$/.test(v.trim()), problem: (name, v) => `${name} must be a whole number of seconds from 0 to 999999 (got "${v}")` },
];

/** The per-chain variables set in `env` (non-empty), each family's rule checked. */
function readChainVariables(env: Env, problems: string[]): Record<string, string> {
  const found: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (!value) continue;
    const entry = CHAIN_VARIABLE_FAMILIES.find((f) => name.startsWith(`${f.family}_`) && /^[A-Z0-9_]+$/.test(name.slice(f.family.length + 1)));
    const bare = name === 'HEAD_LAG_SECONDS' ? CHAIN_VARIABLE_FAMILIES.find((f) => f.family === name) : undefined;
    const family = entry ?? bare;
    if (!family) continue;
    found[name] = value;
    if (family.valid && !family.valid(value)) problems.push(family.problem!(name, value));
  }
  return found;
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const problems: string[] = [];
  const e = readEnvironment(env, problems);
  const { NETWORK: network, API_STYLE: apiStyle, PORT: port } = e;

  let secretEncryptionKey: Buffer = DEV_ENCRYPTION_KEY;
  let secretEncryptionKeyIsDefault = true;
  if (e.SECRET_ENCRYPTION_KEY) {
    const key = decodeKey(e.SECRET_ENCRYPTION_KEY);
    if (!key) problems.push('SECRET_ENCRYPTION_KEY must be 32 bytes as 64 hex characters or base64');
    else {
      secretEncryptionKey = key;
      secretEncryptionKeyIsDefault = false;
    }
  } else if (network !== 'local') {
    problems.push(
      `SECRET_ENCRYPTION_KEY is required when NETWORK=${network} (generate one with: node -e "console.log(require('crypto').randomBytes(32).toString('hex'))")`,
    );
  }

  let retryScheduleMs = DEFAULT_WEBHOOK_SCHEDULE_SECONDS.map((s) => s * 1000);
  if (e.WEBHOOK_RETRY_SCHEDULE) {
    const parts = e.WEBHOOK_RETRY_SCHEDULE.split(',').map((p) => Number(p.trim()));
    if (parts.length === 0 || parts.some((n) => !Number.isFinite(n) || n < 0)) {
      problems.push('WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of seconds, e.g. 0,5,300');
    } else retryScheduleMs = parts.map((s) => Math.round(s * 1000));
  }

  const workerQueuesText = (e.WORKER_QUEUES ?? 'all').trim();
  const chainOverrides = readChainVariables(env, problems);

  const publicBaseUrl = (e.PUBLIC_BASE_URL || `http://localhost:${port || 3000}`).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/\s]+/.test(publicBaseUrl)) problems.push('PUBLIC_BASE_URL must be an absolute http(s) URL');
  // Payers open these URLs: over plain http anyone on the path can swap the address they pay to.
  if (network !== 'local' && publicBaseUrl.startsWith('http://') && !e.ALLOW_INSECURE_PUBLIC_URL) {
    problems.push(`PUBLIC_BASE_URL must be https:// when NETWORK=${network} (payers open it); set ALLOW_INSECURE_PUBLIC_URL=true only behind a proxy you trust or for a trial`);
  }

  const metricsToken = e.METRICS_TOKEN?.trim() || null;
  if (metricsToken && metricsToken.length < 16) problems.push('METRICS_TOKEN must be at least 16 characters');

  const ownerEmail = e.OWNER_EMAIL?.trim() || 'owner@stablegate.local';
  if (!isEmailAddress(ownerEmail)) problems.push('OWNER_EMAIL must be an e-mail address');
  const smtpFrom = e.SMTP_FROM?.trim() || '';
  if (e.SMTP_URL && !isEmailAddress(smtpFrom.replace(/^.*<([^>]+)>\s*$/, '$1'))) {
    problems.push('SMTP_FROM must be an e-mail address (or "Name <address>") when SMTP_URL is set');
  }

  if (e.DATABASE_MAINTENANCE_TIMEOUT_MS < e.DATABASE_WORKER_TIMEOUT_MS) {
    problems.push(
      `DATABASE_MAINTENANCE_TIMEOUT_MS (${e.DATABASE_MAINTENANCE_TIMEOUT_MS}) must be at least DATABASE_WORKER_TIMEOUT_MS (${e.DATABASE_WORKER_TIMEOUT_MS}): it is the allowance of the statements known to be longer`,
    );
  }

  const config: Config = {
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE ?? null,
    redisUrl: e.REDIS_URL,
    redisClusterNodes: parseRedisClusterNodes(e.REDIS_CLUSTER_NODES, problems),
    redisPrefix: e.REDIS_PREFIX,
    port,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    databaseRequestTimeoutMs: e.DATABASE_REQUEST_TIMEOUT_MS,
    databaseWorkerTimeoutMs: e.DATABASE_WORKER_TIMEOUT_MS,
    databaseMaintenanceTimeoutMs: e.DATABASE_MAINTENANCE_TIMEOUT_MS,
    apiStyle,
    network,
    publicBaseUrl,
    logLevel: e.LOG_LEVEL,
    secretEncryptionKey,
    secretEncryptionKeyIsDefault,
    operator: e.OPERATOR_PASSWORD ? { user: e.OPERATOR_USER || 'operator', password: e.OPERATOR_PASSWORD } : null,
    rateLimit: {
      enabled: e.RATE_LIMIT_ENABLED ?? apiStyle === 'b',
      perMinute: e.RATE_LIMIT_PER_MINUTE,
      perHour: e.RATE_LIMIT_PER_HOUR,
      perDay: e.RATE_LIMIT_PER_DAY,
    },
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    importBodyLimitBytes: e.IMPORT_BODY_LIMIT_BYTES,
    workerQueues: workerQueuesText === 'all' || workerQueuesText === '' ? 'all' : workerQueuesText.split(',').map((q) => q.trim()).filter(Boolean),
    dataDir: path.resolve(e.DATA_DIR || '.data'),
    chainsFile: e.CHAINS_FILE?.trim() ? path.resolve(e.CHAINS_FILE.trim()) : null,
    chainOverrides,
    webhooks: {
      allowInsecure: e.WEBHOOK_ALLOW_INSECURE ?? network === 'local',
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      retryScheduleMs,
      retryJitter: e.WEBHOOK_RETRY_JITTER,
      disableAfterMs: e.WEBHOOK_DISABLE_AFTER_HOURS * 3600_000,
      requeueAfterMs: e.WEBHOOK_REQUEUE_AFTER_MS,
      fastPath: e.WEBHOOK_FAST_PATH,
    },
    intervals: {
      chainScanMs: e.CHAIN_SCAN_INTERVAL_MS,
      confirmationsMs: e.CONFIRMATIONS_INTERVAL_MS,
      orderExpiryMs: e.ORDER_EXPIRY_INTERVAL_MS,
      poolCooldownMs: e.POOL_COOLDOWN_INTERVAL_MS,
      poolLowCheckMs: e.POOL_LOW_CHECK_INTERVAL_MS,
      webhookRelayMs: e.WEBHOOK_RELAY_INTERVAL_MS,
      idempotencyCleanupMs: e.IDEMPOTENCY_CLEANUP_INTERVAL_MS,
      tableMaintenanceMs: e.TABLE_MAINTENANCE_INTERVAL_MS,
      alertEmailMs: e.ALERT_EMAIL_INTERVAL_MS,
      historyPartitionsMs: e.HISTORY_PARTITIONS_INTERVAL_MS,
      scheduleWatchMs: e.SCHEDULE_WATCH_INTERVAL_MS,
      headLookMs: e.HEAD_LOOK_INTERVAL_MS,
    },
    maintenance: {
      vacuumMinDeadRows: e.VACUUM_MIN_DEAD_ROWS,
    },
    retention: {
      eventDays: e.RETENTION_EVENT_DAYS,
      intervalMs: e.RETENTION_INTERVAL_MS,
      batchSize: e.RETENTION_BATCH_SIZE,
      maxBatchesPerRun: e.RETENTION_MAX_BATCHES_PER_RUN,
    },
    chainStallAlertMs: e.CHAIN_STALL_ALERT_SECONDS * 1000,
    headLookAlertMs: e.HEAD_LOOK_ALERT_AFTER_SECONDS * 1000,
    trustProxy: parseTrustProxy(e.TRUST_PROXY, problems),
    pages: {
      rateLimitPerMinute: e.PAGE_RATE_LIMIT_PER_MINUTE,
      frameAncestors: e.PAGE_FRAME_ANCESTORS,
    },
    dashboard: {
      sessionIdleMs: e.DASHBOARD_SESSION_IDLE_MINUTES * 60_000,
      sessionAbsoluteMs: e.DASHBOARD_SESSION_MAX_HOURS * 3600_000,
      secureCookies: network !== 'local',
      firstOwnerEmail: ownerEmail,
    },
    publicWrites: {
      bodyLimitBytes: e.PUBLIC_WRITE_BODY_LIMIT_BYTES,
    },
    checkout: {
      ordersPerIp: e.CHECKOUT_ORDERS_PER_IP,
      ipWindowSeconds: e.CHECKOUT_IP_WINDOW_SECONDS,
      ordersPerLinkPerMinute: e.CHECKOUT_ORDERS_PER_LINK_PER_MINUTE,
      poolReservePercent: e.CHECKOUT_POOL_RESERVE_PERCENT,
      poolReserveMin: e.CHECKOUT_POOL_RESERVE_MIN,
    },
    startLocalChain: e.START_LOCAL_CHAIN ?? network === 'local',
    localChainPort: e.LOCAL_CHAIN_PORT ?? null,
    tronLocal: {
      port: e.TRON_LOCAL_PORT ?? null,
      blockTimeMs: e.TRON_LOCAL_BLOCK_TIME_MS,
      solidificationLag: e.TRON_LOCAL_SOLIDIFICATION_LAG,
    },
    solanaLocal: {
      port: e.SOLANA_LOCAL_PORT ?? null,
      slotMs: e.SOLANA_LOCAL_SLOT_MS,
      finalizationLag: e.SOLANA_LOCAL_FINALIZATION_LAG,
    },
    allowInsecurePublicUrl: e.ALLOW_INSECURE_PUBLIC_URL,
    metrics: {
      port: e.METRICS_PORT,
      portIsDefault: !env.METRICS_PORT?.trim(),
      token: metricsToken,
      perOrganization: e.METRICS_PER_ORG,
    },
    smtp: e.SMTP_URL ? { url: e.SMTP_URL, from: smtpFrom } : null,
    alertEmailsPerHour: e.ALERT_EMAILS_PER_HOUR,
    allowRedisEviction: e.ALLOW_REDIS_EVICTION,
  };

  // Looks come up to 1.5 intervals apart (core/detection/head-looks.ts): a shorter threshold would call every pause a gap.
  if (config.headLookAlertMs < 2 * config.intervals.headLookMs) {
    problems.push(`HEAD_LOOK_ALERT_AFTER_SECONDS (${config.headLookAlertMs / 1000}) must be at least twice HEAD_LOOK_INTERVAL_MS (${config.intervals.headLookMs} ms)`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...config, ...overrides };
}

/** A plain e-mail address (local@domain.tld), the form alerts.email and SMTP_FROM take. */
export function isEmailAddress(text: string): boolean {
  return text.length <= 254 && /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/.test(text);
}

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY: unset, empty, `false` or `0` trusts nothing; a number trusts that many proxy hops
 * in front of us; otherwise a comma-separated list of proxy addresses or CIDR ranges (or the names
 * loopback, linklocal, uniquelocal). `true` is refused: trusting every peer lets any client pick
 * its IP and so its rate limit.
 */
export function parseTrustProxy(text: string | undefined, problems: string[]): false | number | string[] {
  const value = (text ?? '').trim();
  if (value === '' || value === 'false' || value === '0') return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > 20) problems.push('TRUST_PROXY hop count must be from 0 to 20');
    return hops;
  }
  const entries = value.split(',').map((e) => e.trim()).filter(Boolean);
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.has(entry)) continue;
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address);
    const maxPrefix = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= maxPrefix);
    if (!family || !prefixOk || extra !== undefined) {
      problems.push(`TRUST_PROXY entry "${entry}" is not a hop count, an IP address, a CIDR range or loopback/linklocal/uniquelocal`);
    }
  }
  return entries;
}

function decodeKey(text: string): Buffer | null {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  const b = Buffer.from(text, 'base64');
  return b.length === 32 ? b : null;
}

/** A random 32-byte key, for tests. */
export function randomEncryptionKey(): Buffer {
  return randomBytes(32);
}

/**
 * REDIS_CLUSTER_NODES: comma-separated seed nodes of a Redis Cluster, `host:port` or
 * `redis://[user:password@]host:port` (`rediss://` for TLS); the client finds the other nodes itself.
 */
function parseRedisClusterNodes(text: string | undefined, problems: string[]): string[] | null {
  if (!text?.trim()) return null;
  const nodes: string[] = [];
  for (const raw of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const withScheme = /^[a-z]+:\/\//.test(raw) ? raw : `redis://${raw}`;
    let url: URL | null = null;
    try {
      url = new URL(withScheme);
    } catch {
      url = null;
    }
    if (!url || !['redis:', 'rediss:'].includes(url.protocol) || !url.hostname || !url.port) {
      problems.push(`REDIS_CLUSTER_NODES must list host:port or redis://host:port entries separated by commas (got "${raw}")`);
      return null;
    }
    nodes.push(url.toString());
  }
  return nodes.length ? nodes : null;
}
