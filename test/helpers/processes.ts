import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');

export interface Spawned {
  child: ChildProcess;
  /** Signals the whole process group (the entry and anything it started, e.g. anvil). */
  killGroup(signal?: NodeJS.Signals): void;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first stdout line matching, or rejects after the timeout. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
}

/**
 * Runs one of the project's TypeScript entry points (relative to the root, or absolute) as a real
 * child process, the way the npm scripts and the image do: node itself with tsx as a loader hook,
 * so a signal reaches the entry (the tsx binary would sit in between as a parent relaying signals).
 */
export function spawnEntry(entry: string, env: Record<string, string>, args: string[] = []): Spawned {
  return spawnNode(['--import', 'tsx', path.resolve(ROOT, entry), ...args], env);
}

/** The same entry from a compiled build (`node scripts/build.mjs <buildDir>`), as the image runs it. */
export function spawnBuiltEntry(buildDir: string, entry: string, env: Record<string, string>): Spawned {
  return spawnNode(['--enable-source-maps', path.join(buildDir, entry.replace(/\.ts$/, '.js'))], env);
}

function spawnNode(nodeArgs: string[], env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, nodeArgs, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  let err = '';
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  child.stdout!.on('data', (chunk) => {
    out += chunk.toString();
    for (const w of [...waiters]) {
      const line = out.split('\n').find((l) => w.pattern.test(l));
      if (line) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  child.stderr!.on('data', (chunk) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    killGroup(signal: NodeJS.Signals = 'SIGKILL') {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // the group is gone already
      }
    },
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(pattern, timeoutMs = 20_000) {
      const existing = out.split('\n').find((l) => pattern.test(l));
      if (existing) return Promise.resolve(existing);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}\nstdout:\n${out}\nstderr:\n${err}`)), timeoutMs);
        waiters.push({ pattern, resolve: (l) => (clearTimeout(timer), resolve(l)) });
      });
    },
  };
}

/** A TCP port nothing listens on (for "service unreachable" tests). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** A private redis-server the test may stop (never the machine's shared one); `args` adds settings. */
export async function startPrivateRedis(args: string[] = []): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const port = await closedPort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args], { stdio: 'ignore' });
  for (let i = 0; i < 50; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * A TCP proxy in front of a local port that the test can stop and start again on the same port
 * (an RPC provider or the database going down and coming back).
 */
export interface TcpProxy {
  url: string;
  /** Client connections open through the proxy now (a WebSocket is one). */
  connections(): number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
  /** On: new connections are accepted but never answered (a host that drops packets); off: forwarded again. */
  blackhole(on: boolean): void;
  /**
   * The next connection whose client sends bytes containing `marker` is reset (TCP RST) at that
   * moment instead of forwarding them: the client reads ECONNRESET, as from a server that died mid-query.
   */
  resetWhenClientSends(marker: string): void;
  /**
   * Ends every connection open now, both ways, wherever its query is: 'rst' resets them (the client
   * reads ECONNRESET, as from a host that died), 'fin' closes them (the client reads an end, as from
   * a server or pooler that closed them); new connections go through as before. How many were cut.
   */
  cut(how: 'rst' | 'fin'): number;
  /**
   * Every chunk of every connection made from now on passes `tap` (null: none) before it is
   * forwarded; the tap may cut the connection there instead (see ConnectionTap).
   */
  tap(tap: ((connection: number) => ConnectionTap) | null): void;
}

/**
 * How a connection is cut: `rst` resets it (the client reads ECONNRESET, as from a host that
 * died), `fin` closes it in order (the client reads end of stream, as from a server that exited or
 * a pooler that recycled it). Either way the chunk at hand is dropped and the server's side closed.
 */
export type CutKind = 'rst' | 'fin';

/** Sees each chunk of one proxied connection before it is forwarded: null forwards it, a kind cuts there. */
export interface ConnectionTap {
  fromClient(chunk: Buffer): CutKind | null;
  fromServer(chunk: Buffer): CutKind | null;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const clients = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  let holding = false;
  let resetMarker: string | null = null;
  let makeTap: ((connection: number) => ConnectionTap) | null = null;
  let connectionCount = 0;
  const listen = async () => {
    server = net.createServer((client) => {
      if (holding) {
        sockets.add(client);
        client.on('error', () => {}).on('close', () => sockets.delete(client));
        return;
      }
      const upstream = net.connect(targetPort, '127.0.0.1');
      sockets.add(client);
      sockets.add(upstream);
      clients.add(client);
      const tap = makeTap?.(++connectionCount) ?? null;
      let cut = false;
      const cutWith = (kind: CutKind) => {
        cut = true;
        upstream.destroy();
        if (kind === 'rst') client.resetAndDestroy();
        else client.end();
      };
      client.on('data', (chunk: Buffer) => {
        if (cut) return;
        if (resetMarker !== null && chunk.includes(resetMarker)) {
          resetMarker = null;
          cutWith('rst');
          return;
        }
        const kind = tap?.fromClient(chunk);
        if (kind) return cutWith(kind);
        if (!upstream.write(chunk)) client.pause();
      });
      client.on('end', () => upstream.end());
      upstream.on('drain', () => client.resume());
      upstream.on('data', (chunk: Buffer) => {
        if (cut) return;
        const kind = tap?.fromServer(chunk);
        if (kind) return cutWith(kind);
        if (!client.write(chunk)) upstream.pause();
      });
      upstream.on('end', () => client.end());
      client.on('drain', () => upstream.resume());
      const cleanup = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
        clients.delete(client);
      };
      client.on('error', cleanup).on('close', cleanup);
      upstream.on('error', cleanup).on('close', cleanup);
    });
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(port, '127.0.0.1', () => resolve());
    });
    port = (server!.address() as net.AddressInfo).port;
  };
  const stop = async () => {
    if (!server) return;
    const s = server;
    server = null;
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    clients.clear();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await listen();
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => clients.size,
    stop,
    start: listen,
    close: stop,
    blackhole: (on) => void (holding = on),
    resetWhenClientSends: (marker) => void (resetMarker = marker),
    tap: (t) => void (makeTap = t),
    cut(how: CutKind) {
      const open = [...clients];
      for (const client of open) {
        if (how === 'rst') client.resetAndDestroy();
        else client.destroy();
      }
      return open.length;
    },
  };
}
