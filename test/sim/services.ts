import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { closedPort, spawnBuiltEntry, spawnEntry, type Spawned } from '../helpers/processes';

/**
 * A private redis-server on a random port that the simulation restarts on the same port, losing
 * its data (no persistence) — never the machine's shared Redis.
 */
export interface RestartableRedis {
  url: string;
  restarts: number;
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listens on port ${port} after ${timeoutMs} ms`);
}

export async function startRestartableRedis(): Promise<RestartableRedis> {
  const port = await closedPort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await waitForPort(port);
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  const redis: RestartableRedis = {
    url: `redis://127.0.0.1:${port}`,
    restarts: 0,
    async restart(downMs) {
      await stop();
      await new Promise((r) => setTimeout(r, downMs));
      await start();
      redis.restarts++;
    },
    stop,
  };
  return redis;
}

/** The API process and K worker processes, spawned from the project's entry points. */
export interface ServiceProcesses {
  apiUrl: string;
  kills: number;
  /** SIGKILLs worker i (its whole process group) and starts a new one in its place. */
  killWorker(i: number): Promise<void>;
  /** Every worker down (SIGKILL) for `ms` while the API goes on, then started again. */
  workersDown(ms: number): Promise<void>;
  workerCount: number;
  stop(): Promise<void>;
  /** Errors (level ≥ 50) the processes logged. */
  errorLines(): string[];
}

/** From the TypeScript sources, or from a compiled build (`buildDir`) as production runs them. */
export async function startServiceProcesses(env: Record<string, string>, workers: number, logDir: string, buildDir?: string): Promise<ServiceProcesses> {
  fs.mkdirSync(logDir, { recursive: true });
  const all: { name: string; p: Spawned }[] = [];
  const logs = new Map<string, fs.WriteStream>();
  const track = (name: string, p: Spawned) => {
    const stream = logs.get(name) ?? fs.createWriteStream(path.join(logDir, `${name}.log`), { flags: 'a' });
    logs.set(name, stream);
    p.child.stdout!.on('data', (c: Buffer) => stream.write(c));
    p.child.stderr!.on('data', (c: Buffer) => stream.write(c));
    all.push({ name, p });
    return p;
  };
  // A process that fails to start (e.g. the shared Postgres is out of connections for a moment)
  // is started again: start-up trouble of a loaded machine is not what the simulation tests.
  const startReady = async (name: string, entry: string, procEnv: Record<string, string>, ready: RegExp): Promise<{ p: Spawned; line: string }> => {
    for (let attempt = 1; ; attempt++) {
      const p = track(name, buildDir ? spawnBuiltEntry(buildDir, entry, procEnv) : spawnEntry(entry, procEnv));
      const outcome = await Promise.race([p.waitFor(ready, 120_000).then((line) => ({ line })), p.exited.then((code) => ({ exit: code }))]);
      if ('line' in outcome) return { p, line: outcome.line };
      if (attempt >= 5) throw new Error(`${name} exited with ${outcome.exit} at start-up: ${p.stderr().slice(-500)} ${p.stdout().slice(-500)}`);
      await new Promise((r) => setTimeout(r, 2_000 * attempt));
    }
  };
  // Readiness lines are info level: workers log at info (their warnings are what matters anyway).
  const workerEnv = { ...env, LOG_LEVEL: env.LOG_LEVEL === 'warn' ? 'info' : env.LOG_LEVEL };
  const startWorker = async (i: number) => (await startReady(`worker-${i}`, 'workers/main.ts', workerEnv, /workers started/)).p;
  let api: { p: Spawned; line: string };
  let workerProcs: Spawned[];
  try {
    [api, ...workerProcs] = await Promise.all([
      startReady('api', 'api/main.ts', { ...env, PORT: '0', LOG_LEVEL: 'info' }, /API listening on/),
      ...Array.from({ length: workers }, (_, i) => startWorker(i)),
    ]) as [{ p: Spawned; line: string }, ...Spawned[]];
  } catch (err) {
    for (const { p } of all) p.killGroup('SIGKILL');
    throw err;
  }
  const port = /localhost:(\d+)/.exec(api.line)?.[1];
  const errorLines: string[] = [];
  const restarting = new Set<number>();
  const handle: ServiceProcesses = {
    apiUrl: `http://127.0.0.1:${port}`,
    kills: 0,
    workerCount: workers,
    async killWorker(i) {
      if (restarting.has(i)) return;
      restarting.add(i);
      const old = workerProcs[i];
      old.killGroup('SIGKILL');
      await old.exited;
      handle.kills++;
      try {
        workerProcs[i] = await startWorker(i);
      } finally {
        restarting.delete(i);
      }
    },
    async workersDown(ms) {
      const indexes = workerProcs.map((_, i) => i).filter((i) => !restarting.has(i));
      for (const i of indexes) restarting.add(i);
      try {
        await Promise.all(indexes.map(async (i) => {
          workerProcs[i].killGroup('SIGKILL');
          await workerProcs[i].exited;
        }));
        handle.kills += indexes.length;
        await new Promise((r) => setTimeout(r, ms));
        await Promise.all(indexes.map(async (i) => (workerProcs[i] = await startWorker(i))));
      } finally {
        for (const i of indexes) restarting.delete(i);
      }
    },
    async stop() {
      for (const { p } of all) p.killGroup('SIGTERM');
      await Promise.all(all.map(({ p }) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 8000))])));
      for (const { p } of all) p.killGroup('SIGKILL');
      for (const s of logs.values()) s.end();
    },
    errorLines() {
      errorLines.length = 0;
      for (const { name, p } of all) {
        for (const l of p.stdout().split("\n")) if (/"level":("error"|"fatal"|50|60)/.test(l) && !/"request completed"|"request failed"/.test(l)) errorLines.push(`${name}: ${l.slice(0, 600)}`);
      }
      return errorLines;
    },
  };
  return handle;
}
