import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { ensureDatabase, MIGRATIONS_FOLDER } from '../../db/migrate';
import { TEST_DATABASE_URL } from './harness';

/**
 * A database of its own at the schema as it was just before one migration (the journal cut
 * before `tag`), for testing what that migration does to rows stored under the older schema.
 */
export interface DatabaseBeforeMigration {
  sql: postgres.Sql;
  /** Applies the rest: the named migration and every later one. */
  migrateRest(): Promise<void>;
  /** Closes the connection and drops the database. */
  remove(): Promise<void>;
}

export async function databaseBefore(tag: string, suffix: string): Promise<DatabaseBeforeMigration> {
  const dbUrl = TEST_DATABASE_URL.replace(/\/([^/]+)$/, `/$1_${suffix}`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sg-migrations-'));
  cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
  const journalPath = path.join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8'));
  const at = journal.entries.findIndex((e: { tag: string }) => e.tag === tag);
  if (at <= 0) throw new Error(`no migration ${tag} after the first in the journal`);
  writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }));
  await ensureDatabase(dbUrl);
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
  await migrate(drizzle(sql), { migrationsFolder: dir });
  return {
    sql,
    migrateRest: () => migrate(drizzle(sql), { migrationsFolder: MIGRATIONS_FOLDER }),
    async remove() {
      await sql.end();
      rmSync(dir, { recursive: true, force: true });
      const admin = postgres(TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/postgres'), { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists "${new URL(dbUrl).pathname.slice(1)}" with (force)`);
      await admin.end();
    },
  };
}
