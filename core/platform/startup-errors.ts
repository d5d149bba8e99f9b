import { ConfigError } from './config';

/**
 * A failure at start-up whose message is already the one line to show (no stack trace, no
 * guessing): a missing piece of the installation, for example (core/chains/local-tooling.ts).
 */
export class StartupError extends Error {}

const PG_START = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start";
const REDIS_START =
  'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no';

/** One clear line (or a short list) for failures at start-up, instead of a stack trace. */
export function describeStartupError(err: unknown): string {
  if (err instanceof ConfigError || err instanceof StartupError) return err.message;
  const e = err as { code?: string; message?: string; address?: string; port?: number; hostname?: string; errors?: unknown[] };
  const text = `${e?.message ?? err}`;
  const isRedis = /redis/i.test(text) || (e?.port === 6379);
  if (e?.code === 'ECONNREFUSED' || e?.code === 'ENOTFOUND' || e?.code === 'ETIMEDOUT' || e?.code === 'CONNECT_TIMEOUT') {
    if (isRedis) return `Cannot reach Redis (${e.code}${e.address ? ` at ${e.address}:${e.port}` : ''}). Start it with: ${REDIS_START} — or set REDIS_URL.`;
    return `Cannot reach PostgreSQL (${e.code}${e.address ? ` at ${e.address}:${e.port}` : ''}). Start it with: ${PG_START} — or set DATABASE_URL.`;
  }
  if (e?.code === 'EADDRINUSE') {
    return /METRICS_PORT/.test(text) ? text : `Port ${e.port ?? ''} is already in use (another Stablegate or other server?): stop it or set PORT. No organization or key was created.`;
  }
  if (e?.code === '28P01' || e?.code === '28000') return `PostgreSQL refused the credentials in DATABASE_URL: ${text}`;
  if (err instanceof AggregateError && err.errors.length > 0) return describeStartupError(err.errors[0]);
  return `Start-up failed: ${text}`;
}
