import { fillPlaceholders, getTableColumns, Placeholder, sql, type Column, type SQL, type Table } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import postgres from 'postgres';
import { drizzle, type PostgresJsDatabase, type PostgresJsSession } from 'drizzle-orm/postgres-js';
import * as schema from './schema';
import { connectionDeadline, DATABASE_SILENT } from './connection-deadline';

export type Database = PostgresJsDatabase<typeof schema>;
/** A transaction handle; domain operations take one so callers compose them atomically. */
export type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];
/** Either the database or a transaction: read helpers accept both. */
export type DbOrTx = Database | Tx;

export interface DbHandle {
  db: Database;
  sql: postgres.Sql;
  /** Destroys every connection of the pool (their calls fail as unreachable, new ones are opened): for a watchdog. */
  recycle(reason: string): number;
  close(): Promise<void>;
}

export interface DbOptions {
  max?: number;
  /**
   * How long opening a connection may take (TCP, TLS, start-up) before the query waiting for it
   * fails; the API sets DATABASE_REQUEST_TIMEOUT_MS, so a request during an outage is answered fast.
   */
  connectTimeoutMs?: number;
  /**
   * How long a call may wait for the server's answer before its connection is destroyed and the
   * call fails with DATABASE_SILENT (db/connection-deadline.ts); statements time out server-side
   * a little earlier. The API's is DATABASE_REQUEST_TIMEOUT_MS, a worker's DATABASE_WORKER_TIMEOUT_MS.
   */
  answerWithinMs?: number;
}

/** The bound of a client created without one: scripts, benchmarks and tests, whose bulk statements may be long. */
const DEFAULT_ANSWER_WITHIN_MS = 600_000;

/**
 * The longest wait between connection attempts after failures. postgres.js's own back-off grows to
 * 20 s, and a query waits it out before its connection is even tried: during an outage requests
 * hung about 10 s, and after it the first ones waited on. Attempts are cheap (one refused connect).
 */
const MAX_RECONNECT_DELAY_SECONDS = 0.5;

export function createDb(url: string, options: DbOptions = {}): DbHandle {
  const deadline = connectionDeadline({ answerWithinMs: options.answerWithinMs ?? DEFAULT_ANSWER_WITHIN_MS });
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    ...deadline.options,
    connect_timeout: (options.connectTimeoutMs ?? 5000) / 1000,
    backoff: (retries: number) => Math.min(MAX_RECONNECT_DELAY_SECONDS, (3 ** retries / 100) * (0.5 + Math.random() / 2)),
    // Keep bigints exact: int8 columns come back as numbers only through drizzle's mode:'number'.
    types: {},
  });
  const db = drizzle(sql, { schema });
  return { db, sql, recycle: deadline.recycle, close: () => sql.end({ timeout: 5 }) };
}

/** Driver codes of a connection that could not be made or was lost (postgres.js and Node's). */
const CONNECTION_ERROR_CODES = new Set([
  DATABASE_SILENT,
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * Whether an error says the database is unreachable (not that a statement failed): a connection
 * refused, timed out or lost, or a server shutting down, starting or out of connections
 * (SQLSTATE class 08, 57P01-57P03, 53300). drizzle wraps the driver's error in `cause`.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    if (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08') || ['57P01', '57P02', '57P03', '53300'].includes(code)) return true;
  }
  return false;
}

/**
 * Whether a statement ran out of time on a reachable server: cancelled by statement_timeout
 * (57014, query_canceled) or refused a lock by lock_timeout (55P03). Nothing it did was kept.
 */
export function isDatabaseTimeout(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === '57014' || code === '55P03') return true;
  }
  return false;
}

/**
 * Whether an error came from the database rather than from the caller's own logic: unreachable
 * (above) or a statement the server refused (postgres.js's PostgresError, wrapped or not).
 */
export function isDatabaseError(err: unknown): boolean {
  if (isDatabaseUnreachable(err)) return true;
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { name?: unknown }).name === 'PostgresError') return true;
  }
  return false;
}

/** The health check's database probe. */
export async function pingDatabase(db: DbOrTx): Promise<void> {
  await db.execute(sql`select 1`);
}

/*
 * The store boundary for hand-tuned SQL: the only place that reaches below drizzle's public query
 * API (the session's postgres.js client, driver values). Domain code writes its hand-tuned
 * statements with drizzle's `sql` and runs them through here; each one is registered by name, and
 * test/foundation/hand-written-sql.test.ts keeps a snapshot of its text.
 */
const dialect = new PgDialect();

/** A hand-written statement built once, run as a prepared statement with new values each time. */
export interface PreparedStatement<Values extends Record<string, unknown>> {
  readonly name: string;
  /** The text sent to Postgres ($n markers, one per distinct placeholder). */
  readonly text: string;
  /** What each $n is: a placeholder's name, or the value fixed when the statement was built. */
  readonly parameters: ({ placeholder: string } | { value: unknown })[];
  /** Runs on the database's pool, or inside the transaction when given one. */
  run<Row extends Record<string, unknown> = Record<string, unknown>>(db: DbOrTx, values: Values): Promise<Row[]>;
}

const handWritten = new Map<string, PreparedStatement<never>>();

/** Every hand-written statement of this process so far, by name (snapshotted by a test). */
export function handWrittenStatements(): ReadonlyMap<string, Pick<PreparedStatement<never>, 'text' | 'parameters'>> {
  return handWritten;
}

/**
 * Builds a statement written with `sql.placeholder(name)` for its values once (text and parameter
 * order) and runs it as a prepared statement: once a connection has it, one round trip and no
 * query building. drizzle's postgres-js driver sends every query unprepared (drizzle-orm#6096), and
 * postgres.js then has the server describe the parameters before binding them: two round trips.
 * For hot statements only: postgres.js keeps each prepared text per connection, so this is never
 * for texts that vary (an IN list of varying length would grow that cache without bound). `name`
 * (unique, `area.what`) identifies it in the snapshot test.
 */
export function prepareStatement<Values extends Record<string, unknown>>(name: string, query: SQL): PreparedStatement<Values> {
  if (handWritten.has(name)) throw new Error(`Hand-written statement ${name} is defined twice`);
  const { text, params } = bindEachPlaceholderOnce(dialect.sqlToQuery(query));
  const statement: PreparedStatement<Values> = {
    name,
    text,
    parameters: params.map((p) => (p instanceof Placeholder ? { placeholder: p.name } : { value: p })),
    async run<Row extends Record<string, unknown>>(db: DbOrTx, values: Values): Promise<Row[]> {
      const filled = fillPlaceholders(params, values) as postgres.ParameterOrJSON<never>[];
      // The session's client: the pool for the database, the transaction's connection for a tx.
      const { client } = db._.session as unknown as PostgresJsSession<postgres.Sql, never, never>;
      return (await client.unsafe(text, filled, { prepare: true })) as unknown as Row[];
    },
  };
  handWritten.set(name, statement as PreparedStatement<never>);
  return statement;
}

/** Each table's [property, column] pairs, listed once rather than on every row. */
const columnsOfTable = new WeakMap<Table, [string, Column][]>();

function columnsOf(table: Table): [string, Column][] {
  let columns = columnsOfTable.get(table);
  if (!columns) {
    columns = Object.entries(getTableColumns(table));
    columnsOfTable.set(table, columns);
  }
  return columns;
}

/**
 * A row returned by a hand-written statement (`returning *`, snake_case driver values) in the
 * shape drizzle's own queries give (camelCase, mapped through each column's type).
 */
export function rowFromDriver<T extends Table>(table: T, raw: Record<string, unknown>): T['$inferSelect'] {
  return readColumns(columnsOf(table), raw) as T['$inferSelect'];
}

function readColumns(columns: [string, Column][], raw: Record<string, unknown>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const [property, column] of columns) {
    const value = raw[column.name];
    row[property] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row;
}

/**
 * Some of a table's columns, for a hand-written statement that reads only what its caller needs:
 * `names` (SQL column names) for its select list, `read` for each raw row, both from one list.
 */
export function columnsReader<T extends Table, K extends keyof T['$inferSelect'] & string>(
  table: T,
  properties: readonly K[],
): { names: string[]; read(raw: Record<string, unknown>): Pick<T['$inferSelect'], K> } {
  const all = getTableColumns(table);
  const columns = properties.map((p): [string, Column] => [p, all[p]]);
  return { names: columns.map(([, c]) => c.name), read: (raw) => readColumns(columns, raw) as Pick<T['$inferSelect'], K> };
}

/**
 * drizzle gives every occurrence of a placeholder its own parameter ($n); a statement that uses a
 * value in several places (the organization, the time) would send and encode it each time. Here
 * each name becomes one parameter, used wherever it occurs. The text's parameter markers are
 * counted first, so a `$` anywhere else in it cannot be renumbered by mistake.
 */
export function bindEachPlaceholderOnce(query: { sql: string; params: unknown[] }): { text: string; params: unknown[] } {
  const markers = query.sql.match(/\$\d+/g) ?? [];
  if (markers.length !== query.params.length) {
    throw new Error(`Statement has ${markers.length} parameter markers for ${query.params.length} parameters`);
  }
  const params: unknown[] = [];
  const numberOfName = new Map<string, number>();
  const renumbered = query.params.map((param) => {
    if (param instanceof Placeholder) {
      const known = numberOfName.get(param.name);
      if (known !== undefined) return known;
      numberOfName.set(param.name, params.length + 1);
    }
    params.push(param);
    return params.length;
  });
  const text = query.sql.replace(/\$(\d+)/g, (_, n: string) => `$${renumbered[Number(n) - 1]}`);
  return { text, params };
}
