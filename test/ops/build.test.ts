import { expect } from 'chai';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { builtinModules } from 'node:module';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL } from '../helpers/harness';
import { closedPort, ROOT } from '../helpers/processes';
import { eventually } from '../helpers/wait';

const run = promisify(execFile);
/** The build of this test run, beside dist/ (node_modules resolve from the root as they do for dist/). */
const OUT = path.join(ROOT, `.build-test-${process.pid}-${randomBytes(3).toString('hex')}`);
/** Requires that dependencies make inside try/catch, for packages they can do without. */
const OPTIONAL_REQUIRES = [
  'bufferutil', // ws (Solana's RPC subscriptions): a native speed-up
  'utf-8-validate', // ws: a native speed-up
  '@valkey/valkey-glide', // bullmq: another Redis client
  'pg', // bullmq: its PostgreSQL backend
];
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

/** Runs a compiled entry as the image does: plain node, source maps on, nothing else loaded. */
function spawnCompiled(entry: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--enable-source-maps', path.join(OUT, entry)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

const getStatus = (url: string) =>
  new Promise<number>((resolve) => {
    http.get(url, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', () => resolve(0));
  });

describe('the compiled build (npm run build → node dist/…)', function () {
  this.timeout(120_000);
  let env: Record<string, string>;

  before(async () => {
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), OUT], { cwd: ROOT });
    expect(stdout).to.match(/^built 5 bundles of \d+ files/);
    const dead = `http://127.0.0.1:${await closedPort()}`;
    // As the image runs: a real network (NETWORK=local needs the development tooling it leaves out).
    env = {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}build`,
      NETWORK: 'testnet',
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      ALLOW_INSECURE_PUBLIC_URL: 'true',
      LOG_LEVEL: 'info',
      METRICS_PORT: '0',
      RPC_URLS_ETHEREUM_SEPOLIA: dead,
      RPC_URLS_POLYGON_AMOY: dead,
      RPC_URLS_TRON_NILE: dead,
      RPC_URLS_SOLANA_DEVNET: dead,
    };
  });

  after(() => rmSync(OUT, { recursive: true, force: true }));

  it('emits one bundle with a source map per entry, the migrations and the page assets', () => {
    for (const file of ['api/main.js', 'workers/main.js', 'scripts/start.js', 'scripts/migrate.js', 'scripts/admin.js']) {
      expect(existsSync(path.join(OUT, file)), file).to.equal(true);
      expect(existsSync(path.join(OUT, `${file}.map`)), `${file}.map`).to.equal(true);
    }
    const sql = readdirSync(path.join(OUT, 'db/migrations')).filter((f) => f.endsWith('.sql'));
    expect(sql).to.deep.equal(readdirSync(path.join(ROOT, 'db/migrations')).filter((f) => f.endsWith('.sql')));
    expect(existsSync(path.join(OUT, 'db/migrations/meta/_journal.json'))).to.equal(true);
    expect(readdirSync(path.join(OUT, 'api/pages/assets'))).to.deep.equal(readdirSync(path.join(ROOT, 'api/pages/assets')));
    // Development tooling stays out (the image has no local chain).
    expect(existsSync(path.join(OUT, 'scripts/local-chain'))).to.equal(false);
  });

  it('refuses NETWORK=local with the true reason (dist/ leaves the local-chain tooling out) and says to run npm start, from a full checkout', async () => {
    // The checkout beside the build has scripts/local-chain/ and anvil: they are not what is missing.
    expect(existsSync(path.join(ROOT, 'scripts/local-chain/local-chain.ts'))).to.equal(true);
    const start = spawnCompiled('scripts/start.js', { ...env, NETWORK: 'local', DATABASE_URL: `postgres://postgres@127.0.0.1:${await closedPort()}/none` });
    expect(await start.exited).to.equal(1);
    const lines = start.output().trim().split('\n');
    expect(lines, start.output()).to.have.length(1);
    expect(lines[0]).to.include('NETWORK=local does not run from the compiled build').and.include('`npm start`').and.not.include('missing');
  });

  it('requires no package outside the production dependencies (the image installs with --omit=dev)', () => {
    const builtins = new Set(builtinModules);
    const offending: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.name.endsWith('.js')) {
          const code = readFileSync(full, 'utf8');
          for (const { 1: spec, index } of code.matchAll(/require\("([^"./][^"]*)"\)/g)) {
            const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
            if (spec.startsWith('node:') || builtins.has(name) || name in pkg.dependencies) continue;
            // A dependency's optional require, tried and skipped when the package is absent.
            if (OPTIONAL_REQUIRES.includes(name) && code.slice(Math.max(0, index! - 120), index).includes('try{')) continue;
            offending.push(`${path.relative(OUT, full)} requires ${spec}`);
          }
        }
      }
    };
    walk(OUT);
    expect(offending).to.deep.equal([]);
    expect(pkg.dependencies).to.not.have.property('tsx');
  });

  it('maps stack traces to the TypeScript sources', async () => {
    // A failure inside the bundle at load: the payment page's assets cannot be read.
    const script = `const fs = require('node:fs'); const readdirSync = fs.readdirSync;
      fs.readdirSync = (dir, ...rest) => { if (String(dir).endsWith('assets')) throw new Error('assets unreadable'); return readdirSync(dir, ...rest) };
      try { require(${JSON.stringify(path.join(OUT, 'api/main.js'))}) } catch (e) { console.log(e.stack) }`;
    const { stdout } = await run(process.execPath, ['--enable-source-maps', '-e', script], { cwd: ROOT });
    expect(stdout).to.include('assets unreadable');
    const frames = stdout.split('\n').filter((line) => line.trim().startsWith('at '));
    expect(frames[1], stdout).to.match(/api\/pages\/static-assets\.ts:\d+:\d+\)$/);
    expect(stdout).to.not.match(/main\.js:\d+/);
  });

  it('migrates, then runs the API to a healthy /health and stops on SIGTERM', async () => {
    const migrate = spawnCompiled('scripts/migrate.js', env);
    expect(await migrate.exited, migrate.output()).to.equal(0);
    expect(migrate.output()).to.include('migrations applied');

    const port = await closedPort();
    const api = spawnCompiled('api/main.js', { ...env, PORT: String(port) });
    try {
      await eventually(async () => (await getStatus(`http://127.0.0.1:${port}/health`)) === 200, 60_000, `the compiled API's /health\n${api.output()}`);
      expect(api.output()).to.include('API listening');
      api.child.kill('SIGTERM');
      expect(await api.exited, api.output()).to.equal(0);
    } finally {
      api.child.kill('SIGKILL');
    }
  });

  it('runs a worker that starts its queues and stops on SIGTERM', async () => {
    const worker = spawnCompiled('workers/main.js', { ...env, WORKER_QUEUES: 'webhook-relay,webhook-delivery' });
    try {
      await eventually(() => worker.output().includes('workers started'), 60_000, `the compiled worker's start\n${worker.output()}`);
      worker.child.kill('SIGTERM');
      expect(await worker.exited, worker.output()).to.equal(0);
    } finally {
      worker.child.kill('SIGKILL');
    }
  });
});
