import path from 'node:path';
import postgres from 'postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import { deadlineOptions, type ConnectionDeadline } from './connection-deadline';

export const MIGRATIONS_FOLDER = path.join(__dirname, 'migrations');
/** The bound of the short start-up statements (does the database exist, create it). */
const SETUP_DEADLINE: ConnectionDeadline = { answerWithinMs: 30_000 };
/**
 * The bound of the migrations when the caller gives none: a migration may rewrite a large table,
 * and the advisory lock waits for another process's migrations (DATABASE_MAINTENANCE_TIMEOUT_MS).
 */
const DEFAULT_MIGRATION_DEADLINE: ConnectionDeadline = { answerWithinMs: 1_800_000 };

/** Arbitrary constant: every process that migrates takes this advisory lock first. */
const MIGRATION_LOCK_KEY = 7_302_211_001;

/** Creates the database named in the URL if it does not exist (safe when several processes race). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) return;
  const probe = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 5, ...deadlineOptions(SETUP_DEADLINE) });
  try {
    await probe`select 1`;
    return;
  } catch (err) {
    if ((err as { code?: string }).code !== '3D000') throw err; // 3D000: database does not exist
  } finally {
    await probe.end({ timeout: 1 });
  }
  url.pathname = '/postgres';
  const admin = postgres(url.toString(), { max: 1, onnotice: () => {}, connect_timeout: 5, ...deadlineOptions(SETUP_DEADLINE) });
  try {
    await admin.unsafe(`create database "${name.replace(/"/g, '""')}"`);
  } catch (err) {
    if ((err as { code?: string }).code !== '42P04') throw err; // 42P04: created by another process meanwhile
  } finally {
    await admin.end({ timeout: 1 });
  }
}

/** Applies pending migrations under a Postgres advisory lock: many processes may start at once. */
export async function runMigrations(databaseUrl: string, deadline: ConnectionDeadline = DEFAULT_MIGRATION_DEADLINE): Promise<void> {
  await ensureDatabase(databaseUrl);
  // One connection: the advisory lock is held by the session that runs the migrations. A silent
  // one fails the start-up (the orchestrator restarts it) instead of hanging it.
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 5, ...deadlineOptions(deadline) });
  try {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
    try {
      await migrate(drizzle(sql), { migrationsFolder: MIGRATIONS_FOLDER });
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`;
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}
