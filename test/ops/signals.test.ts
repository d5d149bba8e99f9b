import { expect } from 'chai';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, knownSecrets } from '../helpers/harness';
import { ROOT } from '../helpers/processes';
import { eventually } from '../helpers/webhooks';

/** Every process below `pid` (children, grandchildren …), read from ps. */
function descendants(pid: number): number[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid=']).toString().trim().split('\n').map((l) => l.trim().split(/\s+/).map(Number));
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of rows) if (parent === p) (out.push(child), walk(child));
  };
  walk(pid);
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('SIGTERM to the top process of npm start', function () {
  this.timeout(180_000);
  const dbUrl = TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/$1_signals');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sg-signals-'));
  let receiver: http.Server;
  let npm: ReturnType<typeof spawn> | null = null;

  after(async () => {
    if (npm?.pid) for (const pid of [npm.pid, ...descendants(npm.pid)]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    receiver?.closeAllConnections();
    receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
    const admin = postgres(TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/postgres'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${new URL(dbUrl).pathname.slice(1)}" with (force)`);
    await admin.end();
  });

  it('reaches the service: an in-flight webhook delivery finishes, then npm, node and the local chain are gone within the grace time', async () => {
    // A receiver that takes 2 s to answer: the delivery is in flight when the signal is sent.
    let delivered = false;
    let requestArrived: () => void = () => {};
    const arrived = new Promise<void>((resolve) => (requestArrived = resolve));
    receiver = http.createServer((req, res) => {
      req.resume();
      requestArrived();
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
        delivered = true;
      }, 2000);
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

    let out = '';
    // An empty settings file, so a developer's .env in the checkout is not read (a missing ENV_FILE is an error).
    const envFile = path.join(dataDir, 'empty.env');
    writeFileSync(envFile, '');
    npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        DATABASE_URL: dbUrl,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: `${TEST_REDIS_PREFIX}sig`,
        PORT: '0',
        METRICS_PORT: '0',
        DATA_DIR: dataDir,
        WEBHOOK_RELAY_INTERVAL_MS: '100',
        ENV_FILE: envFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    npm.stdout!.on('data', (c) => (out += c));
    npm.stderr!.on('data', (c) => (out += c));
    const exited = new Promise<number | null>((resolve) => npm!.on('exit', (code) => resolve(code)));

    const key = await eventually(async () => /Owner API key \(shown once, store it now\): (pk_[A-Za-z0-9_-]+)/.exec(out)?.[1], 120_000, `the Owner key in:\n${out}`);
    knownSecrets.add(key);
    const port = Number(/"port":(\d+)[^\n]*API listening/.exec(out)?.[1]);
    // npm start serves /metrics too, on its own port.
    const metricsPort = Number(/metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(out)?.[1]);
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(metrics.status).to.equal(200);
    expect(await metrics.text()).to.match(/^stablegate_queue_jobs\{queue="chain-scan",state="waiting"\} \d+$/m);
    const base = `http://127.0.0.1:${port}/api/v1`;
    const headers = { 'X-API-Key': key, 'content-type': 'application/json' };
    const ep = await (await fetch(`${base}/webhooks/endpoints`, { method: 'POST', headers, body: JSON.stringify({ url: hook, events: ['order.completed'] }) })).json();
    expect(ep.id, JSON.stringify(ep)).to.match(/^whe_/);
    const test = await fetch(`${base}/webhooks/endpoints/${ep.id}/test`, { method: 'POST', headers });
    expect(test.status).to.be.oneOf([200, 201, 202]);
    await arrived;

    const processes = [npm.pid!, ...descendants(npm.pid!)];
    expect(processes.length, 'npm, node and anvil').to.be.at.least(3);
    const signalledAt = Date.now();
    npm.kill('SIGTERM');
    const code = await exited;
    const tookMs = Date.now() - signalledAt;

    expect(code, out).to.equal(0);
    expect(delivered, 'the in-flight delivery was answered before the process exited').to.equal(true);
    expect(tookMs).to.be.below(30_000); // compose's stop_grace_period for the API
    await eventually(async () => processes.every((p) => !alive(p)), 5000, 'every process of npm start to be gone');
    expect(out).to.match(/shutting down/);
    expect(out).to.match(/shut down cleanly/);
    // The attempt was recorded as a success: the worker finished it instead of abandoning it.
    const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql`select d.status from webhook_deliveries d where d.endpoint_id = ${ep.id}`;
      expect(rows.map((r) => r.status)).to.deep.equal(['succeeded']);
    } finally {
      await sql.end();
    }
  });
});
