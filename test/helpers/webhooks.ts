import http from 'node:http';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Config } from '../../core/platform/config';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { testConfig, testContext } from './harness';
import { eventually } from './wait';

/** What the local receiver saw of one request. */
export interface ReceivedRequest {
  n: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  receivedAt: number;
}

export type ReceiverAnswer = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Requests to one path. */
  on(path: string): ReceivedRequest[];
  waitFor(count: number, opts?: { path?: string; timeoutMs?: number }): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/**
 * A local HTTP receiver on port 0. `answer` decides each reply from the request and how many
 * requests that path has had (1-based); default 200 {received:true}.
 */
export async function startReceiver(answer: (req: ReceivedRequest) => ReceiverAnswer = () => ({ status: 200 })): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const seen: ReceivedRequest = {
        n: requests.filter((r) => r.path === path).length + 1,
        method: req.method ?? '',
        path,
        headers: req.headers,
        body: Buffer.concat(chunks),
        receivedAt: Date.now(),
      };
      requests.push(seen);
      const a = answer(seen);
      if (a === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(a.status, { 'Content-Type': 'application/json', ...(a.headers ?? {}) });
      res.end(a.body ?? JSON.stringify({ received: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    on: (path) => requests.filter((r) => r.path === path),
    async waitFor(count, opts = {}) {
      const pick = () => (opts.path ? requests.filter((r) => r.path === opts.path) : requests);
      return eventually(() => pick().length >= count && pick(), opts.timeoutMs ?? 15_000, `${count} requests${opts.path ? ` on ${opts.path}` : ''}`).catch(() => {
        throw new Error(`receiver got ${pick().length} of ${count} requests${opts.path ? ` on ${opts.path}` : ''}`);
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Pacing only (e.g. a receiver that answers late); to wait for something to happen use eventually. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `probe` returns a truthy value (test/helpers/wait.ts; re-exported for existing tests). */
export { eventually };

/** Compressed webhook settings for tests (seconds in WEBHOOK_RETRY_SCHEDULE). */
export const FAST_WEBHOOK_ENV: Record<string, string> = {
  WEBHOOK_ALLOW_INSECURE: 'true',
  WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.4,0.6,0.8',
  WEBHOOK_RETRY_JITTER: '0.1',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_RELAY_INTERVAL_MS: '100',
  WEBHOOK_REQUEUE_AFTER_MS: '500',
  WORKER_QUEUES: 'webhook-relay,webhook-delivery',
};

/** The real job tier (relay + delivery workers) in this process, on the run's database and prefix. */
export async function startTestWorkers(env: Record<string, string> = {}, overrides: Partial<Config> = {}): Promise<{ workers: RunningWorkers; config: Config }> {
  const config = testConfig({ ...FAST_WEBHOOK_ENV, ...env }, overrides);
  const workers = await startWorkerProcess(testContext(config));
  return { workers, config };
}

/**
 * A free port for a process to listen on later. Picked below the kernel's ephemeral range: a port
 * taken from that range (listen on 0) was handed again to another process's listen-on-0 before
 * the one it was meant for bound it (the quick start's webhook receiver: EADDRINUSE, and the
 * service's deliveries went to another server, 404).
 */
export async function freePort(): Promise<number> {
  const ephemeralLow = (() => {
    try {
      return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
    } catch {
      return 32768;
    }
  })();
  const low = 10_000;
  for (let tries = 0; tries < 100; tries++) {
    const port = low + Math.floor(Math.random() * Math.max(1, ephemeralLow - low));
    const srv = net.createServer();
    const bound = await new Promise<boolean>((resolve) => {
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (bound) {
      await new Promise<void>((resolve) => srv.close(() => resolve()));
      return port;
    }
  }
  throw new Error('no free port found below the ephemeral range');
}
