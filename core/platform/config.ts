import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';

/**
 * The one place that reads the environment. Everything else receives a `Config`.
 * Validation happens once, at start-up, and reports every problem in one message.
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

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);

  const network = read.oneOf('NETWORK', ['local', 'testnet', 'mainnet'], 'local') as NetworkName;
  const apiStyle = read.oneOf('API_STYLE', ['a', 'b'], 'b') as ApiStyle;
  const port = read.integer('PORT', 3000, 0, 65535);

  const keyText = env.SECRET_ENCRYPTION_KEY;
  let secretEncryptionKey: Buffer = DEV_ENCRYPTION_KEY;
  let secretEncryptionKeyIsDefault = true;
  if (keyText) {
    const key = decodeKey(keyText);
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

  const operatorUser = env.OPERATOR_USER || 'operator';
  const operatorPassword = env.OPERATOR_PASSWORD;

  const rateLimitEnabled = read.boolean('RATE_LIMIT_ENABLED', apiStyle === 'b');
  const scheduleText = env.WEBHOOK_RETRY_SCHEDULE;
  let retryScheduleMs = DEFAULT_WEBHOOK_SCHEDULE_SECONDS.map((s) => s * 1000);
  if (scheduleText) {
    const parts = scheduleText.split(',').map((p) => Number(p.trim()));
    if (parts.length === 0 || parts.some((n) => !Number.isFinite(n) || n < 0)) {
      problems.push('WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of seconds, e.g. 0,5,300');
    } else retryScheduleMs = parts.map((s) => Math.round(s * 1000));
  }

  const workerQueuesText = (env.WORKER_QUEUES ?? 'all').trim();

  const chainOverrides: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value && (/^(RPC_URLS|RPC_WS_URLS|TOKEN|CONFIRMATIONS|DEPOSIT_CONFIRMATIONS|EXPLORER_TX_URL|ATTRIBUTION_SKEW_SECONDS|HEAD_LAG_SECONDS|TRON_PRO_API_KEY|SOLANA_SCAN_MODE|SOLANA_BLOCKS_PER_REQUEST|RPC_REQUESTS_PER_SECOND|CLOCK_WITNESS_SECONDS)_[A-Z0-9_]+$/.test(name) || name === 'HEAD_LAG_SECONDS')) {
      chainOverrides[name] = value;
      if (name.startsWith('SOLANA_SCAN_MODE_') && !['blocks', 'addresses'].includes(value.trim())) {
        problems.push(`${name} must be blocks (a dedicated provider or own node) or addresses (public endpoints), got "${value}"`);
      }
      if (name.startsWith('SOLANA_BLOCKS_PER_REQUEST_') && !(/^\d{1,3}$/.test(value.trim()) && Number(value) >= 1 && Number(value) <= 100)) {
        problems.push(`${name} must be a whole number from 1 to 100 (getBlock calls per JSON-RPC batch; 1: one plain request per block, for a provider that refuses batches), got "${value}"`);
      }
      if (name.startsWith('RPC_REQUESTS_PER_SECOND_') && !/^\d{1,6}$/.test(value.trim())) {
        problems.push(`${name} must be a whole number of requests per second per provider (0: unlimited), got "${value}"`);
      }
      if (name.startsWith('EXPLORER_TX_URL_') && !/^https?:\/\/[^/\s]+\S*\{txHash\}/.test(value)) {
        problems.push(`${name} must be an http(s) URL containing {txHash}, e.g. https://etherscan.io/tx/{txHash}`);
      }
      if (name.startsWith('HEAD_LAG_SECONDS') && !/^\d{1,3}$/.test(value.trim())) {
        problems.push(`${name} must be a whole number of seconds from 0 to 999 (got "${value}")`);
      }
      if (name.startsWith('CLOCK_WITNESS_SECONDS_') && !/^\d{1,3}$/.test(value.trim())) {
        problems.push(`${name} must be a whole number of seconds from 0 (off) to 999: how far the chain's block timestamps may sit from its clock as measured (got "${value}")`);
      }
      if (name.startsWith('ATTRIBUTION_SKEW_SECONDS_') && !/^\d{1,6}$/.test(value.trim())) {
        problems.push(`${name} must be a whole number of seconds from 0 to 999999 (got "${value}")`);
      }
    }
  }

  const publicBaseUrl = (env.PUBLIC_BASE_URL || `http://localhost:${port || 3000}`).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/\s]+/.test(publicBaseUrl)) problems.push('PUBLIC_BASE_URL must be an absolute http(s) URL');
  // Payers open these URLs: over plain http anyone on the path can swap the address they pay to.
  const allowInsecurePublicUrl = read.boolean('ALLOW_INSECURE_PUBLIC_URL', false);
  if (network !== 'local' && publicBaseUrl.startsWith('http://') && !allowInsecurePublicUrl) {
    problems.push(`PUBLIC_BASE_URL must be https:// when NETWORK=${network} (payers open it); set ALLOW_INSECURE_PUBLIC_URL=true only behind a proxy you trust or for a trial`);
  }

  const metricsToken = env.METRICS_TOKEN?.trim() || null;
  if (metricsToken && metricsToken.length < 16) problems.push('METRICS_TOKEN must be at least 16 characters');

  const ownerEmail = env.OWNER_EMAIL?.trim() || 'owner@stablegate.local';
  if (!isEmailAddress(ownerEmail)) problems.push('OWNER_EMAIL must be an e-mail address');
  const smtpUrl = read.url('SMTP_URL', '', ['smtp:', 'smtps:']);
  const smtpFrom = env.SMTP_FROM?.trim() || '';
  if (smtpUrl && !isEmailAddress(smtpFrom.replace(/^.*<([^>]+)>\s*$/, '$1'))) {
    problems.push('SMTP_FROM must be an e-mail address (or "Name <address>") when SMTP_URL is set');
  }

  const databaseWorkerTimeoutMs = read.integer('DATABASE_WORKER_TIMEOUT_MS', 30_000, 1000, 600_000);
  const databaseMaintenanceTimeoutMs = read.integer('DATABASE_MAINTENANCE_TIMEOUT_MS', 1_800_000, 1000, 86_400_000);
  if (databaseMaintenanceTimeoutMs < databaseWorkerTimeoutMs) {
    problems.push(
      `DATABASE_MAINTENANCE_TIMEOUT_MS (${databaseMaintenanceTimeoutMs}) must be at least DATABASE_WORKER_TIMEOUT_MS (${databaseWorkerTimeoutMs}): it is the allowance of the statements known to be longer`,
    );
  }

  const config: Config = {
    databaseUrl: read.url('DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/stablegate', ['postgres:', 'postgresql:']),
    databasePoolSize: read.integer('DATABASE_POOL_SIZE', null, 2, 200),
    redisUrl: read.url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    redisClusterNodes: parseRedisClusterNodes(env.REDIS_CLUSTER_NODES, problems),
    redisPrefix: read.pattern('REDIS_PREFIX', 'sg', /^[A-Za-z0-9_-]{1,40}$/, 'letters, digits, _ or -'),
    port,
    shutdownTimeoutMs: read.integer('SHUTDOWN_TIMEOUT_MS', 20_000, 1000, 600_000),
    databaseRequestTimeoutMs: read.integer('DATABASE_REQUEST_TIMEOUT_MS', 3000, 100, 120_000),
    databaseWorkerTimeoutMs,
    databaseMaintenanceTimeoutMs,
    apiStyle,
    network,
    publicBaseUrl,
    logLevel: read.oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info') as LogLevel,
    secretEncryptionKey,
    secretEncryptionKeyIsDefault,
    operator: operatorPassword ? { user: operatorUser, password: operatorPassword } : null,
    rateLimit: {
      enabled: rateLimitEnabled,
      perMinute: read.integer('RATE_LIMIT_PER_MINUTE', 100, 1, 10_000_000),
      perHour: read.integer('RATE_LIMIT_PER_HOUR', 1000, 1, 100_000_000),
      perDay: read.integer('RATE_LIMIT_PER_DAY', 10000, 1, 1_000_000_000),
    },
    bodyLimitBytes: read.integer('BODY_LIMIT_BYTES', 100 * 1024, 1024, 50 * 1024 * 1024),
    importBodyLimitBytes: read.integer('IMPORT_BODY_LIMIT_BYTES', 32 * 1024 * 1024, 1024, 512 * 1024 * 1024),
    workerQueues: workerQueuesText === 'all' || workerQueuesText === '' ? 'all' : workerQueuesText.split(',').map((q) => q.trim()).filter(Boolean),
    dataDir: path.resolve(env.DATA_DIR || '.data'),
    chainOverrides,
    webhooks: {
      allowInsecure: read.boolean('WEBHOOK_ALLOW_INSECURE', network === 'local'),
      timeoutMs: read.integer('WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
      retryScheduleMs,
      retryJitter: read.number('WEBHOOK_RETRY_JITTER', 0.1, 0, 1),
      disableAfterMs: read.integer('WEBHOOK_DISABLE_AFTER_HOURS', 72, 1, 24 * 365) * 3600_000,
      requeueAfterMs: read.integer('WEBHOOK_REQUEUE_AFTER_MS', 30_000, 100, 3600_000),
      fastPath: read.boolean('WEBHOOK_FAST_PATH', true),
    },
    intervals: {
      chainScanMs: read.integer('CHAIN_SCAN_INTERVAL_MS', 1000, 50, 3600_000),
      confirmationsMs: read.integer('CONFIRMATIONS_INTERVAL_MS', 1000, 50, 3600_000),
      orderExpiryMs: read.integer('ORDER_EXPIRY_INTERVAL_MS', 5000, 50, 3600_000),
      poolCooldownMs: read.integer('POOL_COOLDOWN_INTERVAL_MS', 30_000, 50, 3600_000),
      poolLowCheckMs: read.integer('POOL_LOW_CHECK_INTERVAL_MS', 60_000, 50, 3600_000),
      webhookRelayMs: read.integer('WEBHOOK_RELAY_INTERVAL_MS', 2000, 50, 3600_000),
      idempotencyCleanupMs: read.integer('IDEMPOTENCY_CLEANUP_INTERVAL_MS', 3600_000, 50, 86_400_000),
      tableMaintenanceMs: read.integer('TABLE_MAINTENANCE_INTERVAL_MS', 60_000, 50, 86_400_000),
      alertEmailMs: read.integer('ALERT_EMAIL_INTERVAL_MS', 10_000, 50, 3600_000),
      historyPartitionsMs: read.integer('HISTORY_PARTITIONS_INTERVAL_MS', 3600_000, 50, 86_400_000),
      scheduleWatchMs: read.integer('SCHEDULE_WATCH_INTERVAL_MS', 10_000, 100, 600_000),
      headLookMs: read.integer('HEAD_LOOK_INTERVAL_MS', 1000, 100, 60_000),
    },
    maintenance: {
      vacuumMinDeadRows: read.integer('VACUUM_MIN_DEAD_ROWS', 5000, 1, 100_000_000),
    },
    retention: {
      eventDays: read.integer('RETENTION_EVENT_DAYS', 90, 0, 36_500),
      intervalMs: read.integer('RETENTION_INTERVAL_MS', 600_000, 50, 86_400_000),
      batchSize: read.integer('RETENTION_BATCH_SIZE', 1000, 1, 50_000),
      maxBatchesPerRun: read.integer('RETENTION_MAX_BATCHES_PER_RUN', 100, 1, 100_000),
    },
    chainStallAlertMs: read.integer('CHAIN_STALL_ALERT_SECONDS', 300, 10, 7 * 86_400) * 1000,
    headLookAlertMs: read.integer('HEAD_LOOK_ALERT_AFTER_SECONDS', 30, 1, 86_400) * 1000,
    trustProxy: parseTrustProxy(env.TRUST_PROXY, problems),
    pages: {
      rateLimitPerMinute: read.integer('PAGE_RATE_LIMIT_PER_MINUTE', 300, 1, 100_000_000),
      frameAncestors: read.pattern('PAGE_FRAME_ANCESTORS', "'none'", /^[A-Za-z0-9 :/.*'_-]{1,500}$/, "CSP sources separated by spaces, e.g. 'self' https://shop.example"),
    },
    dashboard: {
      sessionIdleMs: read.integer('DASHBOARD_SESSION_IDLE_MINUTES', 30, 1, 7 * 24 * 60) * 60_000,
      sessionAbsoluteMs: read.integer('DASHBOARD_SESSION_MAX_HOURS', 12, 1, 30 * 24) * 3600_000,
      secureCookies: network !== 'local',
      firstOwnerEmail: ownerEmail,
    },
    publicWrites: {
      bodyLimitBytes: read.integer('PUBLIC_WRITE_BODY_LIMIT_BYTES', 8 * 1024, 256, 1024 * 1024),
    },
    checkout: {
      ordersPerIp: read.integer('CHECKOUT_ORDERS_PER_IP', 10, 1, 100_000_000),
      ipWindowSeconds: read.integer('CHECKOUT_IP_WINDOW_SECONDS', 3600, 1, 86_400),
      ordersPerLinkPerMinute: read.integer('CHECKOUT_ORDERS_PER_LINK_PER_MINUTE', 60, 1, 100_000_000),
      poolReservePercent: read.integer('CHECKOUT_POOL_RESERVE_PERCENT', 20, 0, 99),
      poolReserveMin: read.integer('CHECKOUT_POOL_RESERVE_MIN', 5, 0, 1_000_000),
    },
    startLocalChain: read.boolean('START_LOCAL_CHAIN', network === 'local'),
    localChainPort: read.integer('LOCAL_CHAIN_PORT', null, 0, 65535),
    tronLocal: {
      port: read.integer('TRON_LOCAL_PORT', null, 0, 65535),
      blockTimeMs: read.integer('TRON_LOCAL_BLOCK_TIME_MS', 3000, 0, 600_000),
      solidificationLag: read.integer('TRON_LOCAL_SOLIDIFICATION_LAG', 2, 0, 1000),
    },
    solanaLocal: {
      port: read.integer('SOLANA_LOCAL_PORT', null, 0, 65535),
      slotMs: read.integer('SOLANA_LOCAL_SLOT_MS', 400, 0, 600_000),
      finalizationLag: read.integer('SOLANA_LOCAL_FINALIZATION_LAG', 32, 1, 1000),
    },
    allowInsecurePublicUrl,
    metrics: {
      port: read.integer('METRICS_PORT', DEFAULT_METRICS_PORT, 0, 65535),
      portIsDefault: !env.METRICS_PORT?.trim(),
      token: metricsToken,
      perOrganization: read.boolean('METRICS_PER_ORG', false),
    },
    smtp: smtpUrl ? { url: smtpUrl, from: smtpFrom } : null,
    alertEmailsPerHour: read.integer('ALERT_EMAILS_PER_HOUR', 10, 1, 10_000),
    allowRedisEviction: read.boolean('ALLOW_REDIS_EVICTION', false),
  };

  // Looks come up to 1.5 intervals apart (core/detection/head-looks.ts): a shorter threshold would call every pause a gap.
  if (config.headLookAlertMs < 2 * config.intervals.headLookMs) {
    problems.push(`HEAD_LOOK_ALERT_AFTER_SECONDS (${config.headLookAlertMs / 1000}) must be at least twice HEAD_LOOK_INTERVAL_MS (${config.intervals.headLookMs} ms)`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...config, ...overrides };
}

/** The Prometheus endpoint's port when METRICS_PORT is not set (the OpenTelemetry exporter's). */
export const DEFAULT_METRICS_PORT = 9464;

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

class EnvReader {
  constructor(private readonly env: Env, private readonly problems: string[]) {}

  private raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  oneOf(name: string, allowed: string[], fallback: string): string {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (!allowed.includes(v)) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')} (got "${v}")`);
      return fallback;
    }
    return v;
  }

  /** The variable as an integer in [min, max]; `fallback` (a number, or null for "not set") when absent or blank. */
  integer<F extends number | null>(name: string, fallback: F, min: number, max: number): number | F {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${v}")`);
      return fallback;
    }
    return n;
  }

  number(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max) {
      this.problems.push(`${name} must be a number from ${min} to ${max} (got "${v}")`);
      return fallback;
    }
    return n;
  }

  boolean(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['true', '1', 'yes', 'on'].includes(v)) return true;
    if (['false', '0', 'no', 'off'].includes(v)) return false;
    this.problems.push(`${name} must be true or false (got "${v}")`);
    return fallback;
  }

  url(name: string, fallback: string, protocols: string[]): string {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol)) throw new Error('protocol');
      return v;
    } catch {
      this.problems.push(`${name} must be a ${protocols.map((p) => p.replace(':', '')).join(' or ')} URL`);
      return fallback;
    }
  }

  pattern(name: string, fallback: string, re: RegExp, what: string): string {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!re.test(v)) {
      this.problems.push(`${name} must be ${what}`);
      return fallback;
    }
    return v;
  }
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
