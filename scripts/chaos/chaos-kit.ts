import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import postgres from 'postgres';
import { ensureDatabase } from '../../db/migrate';
import type { TcpProxy } from '../../test/helpers/processes';
import type { Rng } from '../../test/sim/rng';

/**
 * What the chaos harnesses (soak.ts, proxy-rounds.ts) share: their options, a scratch database, the
 * service as a watched child process, the Postgres connection cutter and the request tally. The
 * proxy itself is the tests' (test/helpers/processes.ts), so there is one chaos proxy.
 */

export const ROOT = path.resolve(__dirname, '..', '..');
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** `--name value`, `--name=value`, else the environment variable `env`, else `fallback`. */
export function option(name: string, env: string, fallback: string): string {
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    if (args[i] === `--${name}` && i + 1 < args.length) return args[i + 1];
    if (args[i].startsWith(`--${name}=`)) return args[i].slice(name.length + 3);
  }
  return process.env[env] ?? fallback;
}

/** A numeric option, refused with a clear message when it is not a number in range. */
export function numberOption(name: string, env: string, fallback: number, min: number, max: number): number {
  const text = option(name, env, String(fallback));
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || value > max) {
    process.stderr.write(`--${name} (${env}) must be a number from ${min} to ${max}, not "${text}"\n`);
    process.exit(2);
  }
  return value;
}

/**
 * Cleanups run once, in reverse order, at the end or on SIGINT/SIGTERM (then the process exits
 * 130/143): a harness interrupted half-way leaves no redis-server, chain, service or database behind.
 */
export function cleanupStack(): { add(fn: () => Promise<unknown> | unknown): void; run(): Promise<void> } {
  const fns: (() => Promise<unknown> | unknown)[] = [];
  let running: Promise<void> | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(`\n${signal}: cleaning up\n`);
    void run().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  const run = () =>
    (running ??= (async () => {
      for (const fn of fns.reverse()) {
        try {
          await fn();
        } catch (err) {
          process.stderr.write(`cleanup: ${(err as Error).message}\n`);
        }
      }
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    })());
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { add: (fn) => void fns.push(fn), run };
}

/** A database of its own on the shared Postgres, created empty and dropped at the end. */
export async function scratchDatabase(label: string): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const base = new URL(process.env.CHAOS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  const name = `sg_${label}_${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  const url = new URL(base);
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  return {
    url: url.toString(),
    name,
    async drop() {
      const admin = postgres(base.toString(), { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await admin.end();
      }
    },
  };
}

/** `url` with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  const p = new URL(proxy.url);
  u.hostname = p.hostname;
  u.port = p.port;
  return u.toString();
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  atMs: number;
  /** The last lines of its stderr (an uncaught exception's stack lands there). */
  stderrTail: string;
}

/**
 * The service as a real child process in its own process group (killing the group takes anything it
 * started, like anvil), its output appended to `logFile`. `exits` lists every exit that was not
 * asked for with stop().
 */
export interface WatchedService {
  child: ChildProcess;
  /** The first stdout line matching `pattern` (its match), or an error if the process exits first. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  alive(): boolean;
  exits: ProcessExit[];
  /** SIGTERM to the process, then SIGKILL to its group after `graceMs`: the exit code of a stop asked for (null: killed). */
  stop(graceMs?: number): Promise<number | null>;
}

export function spawnService(command: string, args: string[], env: Record<string, string>, logFile: string, startedAt: number): WatchedService {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const log = fs.createWriteStream(logFile, { flags: 'a' });
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let pending = '';
  const stdoutLines: string[] = [];
  let stderrTail = '';
  const waiters: { pattern: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    log.write(chunk);
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (stdoutLines.length < 400) stdoutLines.push(line);
      for (const w of [...waiters]) {
        const m = line.match(w.pattern);
        if (m) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    log.write(chunk);
    stderrTail = (stderrTail + chunk.toString()).slice(-4000);
  });
  let stopping = false;
  let exited = false;
  const exits: ProcessExit[] = [];
  const exitedPromise = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => {
      exited = true;
      if (!stopping) exits.push({ code, signal, atMs: Date.now() - startedAt, stderrTail });
      log.end();
      resolve(code);
    }),
  );
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone already
    }
  };
  return {
    child,
    exits,
    alive: () => !exited,
    waitFor(pattern, timeoutMs) {
      for (const line of stdoutLines) {
        const m = line.match(pattern);
        if (m) return Promise.resolve(m);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms; see ${logFile}`)), timeoutMs);
        void exitedPromise.then((code) => reject(new Error(`the service exited (${code}) before printing ${pattern}:\n${stderrTail.slice(-1500)}`)));
        waiters.push({ pattern, resolve: (m) => (clearTimeout(timer), resolve(m)) });
      });
    },
    async stop(graceMs = 15_000) {
      if (exited) return child.exitCode;
      stopping = true;
      // The entry alone: npm relays it to the node process it runs; the group would get it twice.
      child.kill('SIGTERM');
      const code = await Promise.race([exitedPromise, sleep(graceMs).then(() => 'late' as const)]);
      // Anything the entry started and left behind goes with the group.
      killGroup('SIGKILL');
      return code === 'late' ? null : code;
    },
  };
}

/**
 * Resets the connections open through the proxy every `everyMs` (± half, at random), each time by
 * RST or FIN at random: wherever their queries are (connection set-up, mid-query, in a transaction).
 */
export function startConnectionCutter(proxy: TcpProxy, everyMs: number, rng: Rng): { stop(): void; figures: { rst: number; fin: number; connections: number } } {
  const figures = { rst: 0, fin: 0, connections: 0 };
  let timer: NodeJS.Timeout | null = null;
  const next = () => {
    timer = setTimeout(() => {
      const how = rng.chance(0.5) ? 'rst' : 'fin';
      figures[how]++;
      figures.connections += proxy.cut(how);
      next();
    }, Math.round(everyMs * (0.5 + rng.next())));
  };
  next();
  return { figures, stop: () => timer && clearTimeout(timer) };
}

/** Every request's answer (status, 'no-answer' for a network error, 'hung' past the abort limit) and latency. */
export class RequestTally {
  readonly byStatus = new Map<string, number>();
  maxMs = 0;
  sent = 0;
  /** Answers slower than the bound (a request that hangs), with when they were sent. */
  readonly overBound: { atMs: number; ms: number; status: string }[] = [];
  constructor(private readonly boundMs: number) {}
  record(status: string, ms: number, atMs: number): void {
    this.sent++;
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    this.maxMs = Math.max(this.maxMs, ms);
    if (ms > this.boundMs) this.overBound.push({ atMs, ms, status });
  }
  count(status: string): number {
    return this.byStatus.get(status) ?? 0;
  }
  /** Answers other than the given statuses. */
  others(...expected: string[]): number {
    return [...this.byStatus].filter(([s]) => !expected.includes(s)).reduce((n, [, c]) => n + c, 0);
  }
  summary(): string {
    const statuses = [...this.byStatus].sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s}: ${n}`).join(', ');
    return `${this.sent} sent; answered ${statuses || 'nothing'}; max latency ${this.maxMs} ms; ${this.overBound.length} over ${this.boundMs} ms`;
  }
}

/**
 * One HTTP request with a hard limit: its status as text ('no-answer' when the connection failed,
 * 'hung' when nothing came within `abortMs`), the body parsed, the latency.
 */
export async function timedRequest(
  url: string,
  init: { method: string; headers?: Record<string, string>; body?: unknown },
  abortMs: number,
): Promise<{ status: string; body: Record<string, unknown>; ms: number; headers: Headers | null }> {
  const started = performance.now();
  try {
    const res = await fetch(url, {
      method: init.method,
      headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.headers ?? {}) },
      body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
      signal: AbortSignal.timeout(abortMs),
    });
    const text = await res.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = { raw: text.slice(0, 200) };
    }
    return { status: String(res.status), body, ms: Math.round(performance.now() - started), headers: res.headers };
  } catch (err) {
    const hung = (err as Error).name === 'TimeoutError';
    return { status: hung ? 'hung' : 'no-answer', body: { error: (err as Error).message }, ms: Math.round(performance.now() - started), headers: null };
  }
}
