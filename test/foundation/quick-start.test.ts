import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, knownSecrets } from '../helpers/harness';
import { ROOT } from '../helpers/processes';
import { freePort } from '../helpers/webhooks';

/** The shell block between the quick-start markers of README.md, exactly as a reader copies it. */
export function quickStartBlock(readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')): string {
  const m = /<!-- quick-start:begin -->\s*```sh\n([\s\S]*?)```\s*<!-- quick-start:end -->/.exec(readme);
  if (!m) throw new Error('README.md has no quick-start block between <!-- quick-start:begin --> and <!-- quick-start:end -->');
  return m[1];
}

describe("README's quick start, run verbatim", function () {
  this.timeout(240_000);
  const dbUrl = TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/$1_quickstart');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sg-quick-start-'));
  const written = ['stablegate.log', 'webhooks.log', 'receiver.js'].map((f) => path.join(ROOT, f));

  after(async () => {
    for (const f of written) rmSync(f, { force: true });
    rmSync(dataDir, { recursive: true, force: true });
    const admin = postgres(TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/postgres'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${new URL(dbUrl).pathname.slice(1)}" with (force)`);
    await admin.end();
  });

  it('goes from an empty database to a paid order and a verified order.completed webhook', async () => {
    const block = quickStartBlock();
    // Nothing in the block may point at this machine: it is what a newcomer pastes.
    expect(block).to.not.match(/sgt_|sg_test|\/tmp\//);
    for (const f of written) rmSync(f, { force: true });
    const envFile = path.join(dataDir, 'empty.env');
    writeFileSync(envFile, '');
    let out = '';
    const shell = spawn('bash', ['-c', block], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        // Where this test's service lives; the block itself names none of it.
        PORT: String(await freePort()),
        HOOK_PORT: String(await freePort()),
        METRICS_PORT: '0',
        DATABASE_URL: dbUrl,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: `${TEST_REDIS_PREFIX}qs`,
        DATA_DIR: dataDir,
        ENV_FILE: envFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    shell.stdout.on('data', (c) => (out += c));
    shell.stderr.on('data', (c) => (out += c));
    const timer = setTimeout(() => {
      try {
        process.kill(-shell.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    }, 220_000);
    const code = await new Promise<number | null>((resolve) => shell.on('exit', resolve));
    clearTimeout(timer);
    const log = (() => {
      try {
        return readFileSync(path.join(ROOT, 'stablegate.log'), 'utf8');
      } catch {
        return '';
      }
    })();
    for (const k of log.matchAll(/pk_[A-Za-z0-9_-]+/g)) knownSecrets.add(k[0]);
    for (const k of `${out}${log}`.matchAll(/whsec_[A-Za-z0-9_-]+/g)) knownSecrets.add(k[0]);
    const context = `output:\n${out}\nstablegate.log:\n${log.slice(-4000)}`;
    expect(code, context).to.equal(0);
    expect(out, context).to.include('Waiting for your payment');
    expect(out, context).to.match(/Sent 10(\.0+)? USDT to 0x/);
    const verified = out.split('\n').find((l) => l.startsWith('verified '));
    expect(verified, context).to.be.a('string');
    const event = JSON.parse(verified!.slice('verified '.length));
    expect(event).to.deep.include({ type: 'order.completed' });
    expect(event.data).to.include({ orderReference: 'quick-start-1', status: 'completed', paymentState: 'paid' });
    expect(out).to.not.include('BAD SIGNATURE');
    expect(out.trim().split('\n').at(-1)).to.equal('paid');
  });
});
