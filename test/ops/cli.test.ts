import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { HDNodeWallet } from 'ethers';
import postgres from 'postgres';
import request from 'supertest';
import { organizations, poolAddresses } from '../../db/schema';
import { buildTestApp, knownSecrets, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, testDb } from '../helpers/harness';
import { ROOT, spawnEntry } from '../helpers/processes';
import { DEFAULT_DATABASE_POOL_SIZE, ENVIRONMENT_VARIABLES } from '../../core/platform/config';
import { eventually } from '../helpers/webhooks';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sg-cli-'));
const envFile = path.join(dir, '.env');

/** `npm run <script> -- args` as an operator types it; the database is named only in the .env file. */
function npmRun(script: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', script, '--', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ENV_FILE: envFile, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('exit', (code) => resolve({ code, stdout, stderr: stderr.split('\n').filter((l) => !/^npm warn/.test(l)).join('\n') }));
  });
}

describe('admin CLI (npm run admin) with settings from .env', function () {
  this.timeout(120_000);
  const { app } = buildTestApp();
  before(() => {
    writeFileSync(envFile, `# read by npm run admin, never by npm test\nDATABASE_URL=${TEST_DATABASE_URL}\nREDIS_URL=${TEST_REDIS_URL}\nREDIS_PREFIX=${TEST_REDIS_PREFIX}\n`);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  let orgId = '';
  let ownerKey = '';
  let adminKeyId = '';
  let adminKey = '';
  const xpub = HDNodeWallet.createRandom().neuter().extendedKey;

  it('create-org --derive-from fills the EVM and Tron pools and prints the Owner key once', async () => {
    const res = await npmRun('admin', ['create-org', 'CLI org', '--derive-from', xpub, '--count', '5']);
    expect(res.code, res.stderr).to.equal(0);
    orgId = /organization: (org_\S+)/.exec(res.stdout)![1];
    ownerKey = /owner key \(shown once\): (pk_\S+)/.exec(res.stdout)![1];
    knownSecrets.add(ownerKey);
    expect(res.stdout).to.match(/evm pool: 5 addresses derived/);
    expect(res.stdout).to.match(/tron pool: 5 addresses derived/);
    const pool = await testDb().select({ protocol: poolAddresses.protocol }).from(poolAddresses).where(eq(poolAddresses.organizationId, orgId));
    expect(pool.filter((p) => p.protocol === 'evm')).to.have.length(5);
    expect(pool.filter((p) => p.protocol === 'tron')).to.have.length(5);
    expect((await request(app).get('/api/v1/organizations').set('X-API-Key', ownerKey)).status).to.equal(200);
  });

  it('create-org without --derive-from says the pools are empty and how to fill them; fill-pool fills them, continuing after the indexes held', async () => {
    const res = await npmRun('admin', ['create-org', 'Empty CLI org']);
    expect(res.code, res.stderr).to.equal(0);
    const emptyOrg = /organization: (org_\S+)/.exec(res.stdout)![1];
    knownSecrets.add(/owner key \(shown once\): (pk_\S+)/.exec(res.stdout)![1]);
    expect(res.stdout).to.match(/address pools: empty/);
    expect(res.stdout).to.include(`npm run admin -- fill-pool ${emptyOrg} --derive-from`);
    expect(res.stdout).to.match(/address-pool\/derive/);
    const otherXpub = HDNodeWallet.createRandom().neuter().extendedKey;
    const first = await npmRun('admin', ['fill-pool', emptyOrg, '--derive-from', otherXpub, '--count', '3']);
    expect(first.code, first.stderr).to.equal(0);
    expect(first.stdout).to.match(/evm pool: 3 addresses derived \(0\/0 … 0\/2\)/);
    const second = await npmRun('admin', ['fill-pool', emptyOrg, '--derive-from', otherXpub, '--count', '2']);
    expect(second.code, second.stderr).to.equal(0);
    expect(second.stdout).to.match(/tron pool: 2 addresses derived \(0\/3 … 0\/4\)/);
    const pool = await testDb().select({ protocol: poolAddresses.protocol }).from(poolAddresses).where(eq(poolAddresses.organizationId, emptyOrg));
    expect(pool.filter((p) => p.protocol === 'evm')).to.have.length(5);
    expect(pool.filter((p) => p.protocol === 'tron')).to.have.length(5);
    const unknown = await npmRun('admin', ['fill-pool', 'org_nope', '--derive-from', otherXpub]);
    expect(unknown.code).to.not.equal(0);
  });

  it('list-orgs lists it', async () => {
    const res = await npmRun('admin', ['list-orgs']);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stdout).to.match(/^ID\s+NAME\s+CREATED/);
    expect(res.stdout).to.match(new RegExp(`${orgId}\\s+CLI org\\s+\\d{4}-`));
  });

  it('create-key --role makes a working key; list-keys shows keys without their secret', async () => {
    const res = await npmRun('admin', ['create-key', orgId, '--role', 'admin', '--name', 'ops laptop']);
    expect(res.code, res.stderr).to.equal(0);
    adminKeyId = /key id: (key_\S+)/.exec(res.stdout)![1];
    adminKey = /key \(shown once\): (pk_\S+)/.exec(res.stdout)![1];
    knownSecrets.add(adminKey);
    expect((await request(app).get('/api/v1/organizations').set('X-API-Key', adminKey)).status).to.equal(200);

    const list = await npmRun('admin', ['list-keys', orgId]);
    expect(list.code, list.stderr).to.equal(0);
    expect(list.stdout).to.match(new RegExp(`${adminKeyId}\\s+admin\\s+ops laptop`));
    expect(list.stdout).to.match(/owner\s+Owner key/);
    expect(list.stdout).to.not.include(adminKey);
    expect(list.stdout).to.not.include(ownerKey);
  });

  it('revoke-key takes effect at once on a running API (which had the key cached); the last Owner key cannot be revoked', async () => {
    const res = await npmRun('admin', ['revoke-key', adminKeyId]);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stdout).to.match(new RegExp(`revoked: ${adminKeyId}`));
    await eventually(async () => (await request(app).get('/api/v1/organizations').set('X-API-Key', adminKey)).status === 401, 5000, 'the revoked key to be refused');

    const list = await npmRun('admin', ['list-keys', orgId]);
    const ownerId = /^(key_\S+)\s+owner/m.exec(list.stdout)![1];
    const last = await npmRun('admin', ['revoke-key', ownerId]);
    expect(last.code).to.equal(1);
    expect(last.stderr).to.match(/last Owner key/);
  });

  it('refuses bad input with a clear line and changes nothing', async () => {
    const before = (await testDb().select().from(organizations)).length;
    const cases: { args: string[]; code: number; message: RegExp }[] = [
      { args: ['create-key', orgId, '--role', 'superuser'], code: 2, message: /--role must be one of owner, admin, member, viewer/ },
      { args: ['create-key', 'org_nope', '--role', 'admin'], code: 1, message: /Organization org_nope not found/ },
      { args: ['revoke-key', 'key_nope'], code: 1, message: /API key key_nope not found/ },
      { args: ['create-org', 'Bad', '--derive-from', 'xpub-not-really'], code: 2, message: /must be an extended public key/ },
      { args: ['frobnicate'], code: 2, message: /unknown command "frobnicate"/ },
      { args: [], code: 2, message: /Usage: npm run admin/ },
    ];
    for (const c of cases) {
      const res = await npmRun('admin', c.args);
      expect(res.code, `${c.args.join(' ')}: ${res.stderr}`).to.equal(c.code);
      expect(res.stderr, c.args.join(' ')).to.match(c.message);
    }
    const xprv = HDNodeWallet.createRandom().extendedKey;
    const secret = await npmRun('admin', ['create-org', 'Leaky', '--derive-from', xprv]);
    expect(secret.code).to.equal(1);
    expect(secret.stderr).to.match(/possible private key/);
    expect(secret.stdout + secret.stderr).to.not.include(xprv.slice(4, 20));
    expect((await testDb().select().from(organizations)).length).to.equal(before);
  });
});

describe('ENV_FILE naming a missing file', function () {
  this.timeout(60_000);
  for (const script of ['admin', 'migrate']) {
    it(`stops npm run ${script} with a clear error instead of using the default database`, async () => {
      const missing = path.join(dir, 'no-such.env');
      const res = await npmRun(script, script === 'admin' ? ['list-orgs'] : [], { ENV_FILE: missing });
      expect(res.code).to.equal(1);
      expect(res.stderr).to.include(`ENV_FILE names ${missing}, which does not exist`);
      expect(res.stdout).to.equal('');
    });
  }
});

describe('.env is read by the npm scripts, never by npm test', () => {
  it('npm test runs mocha without the .env loader, and this test process has no dotenv in it', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    for (const script of ['start', 'start:api', 'start:worker', 'admin', 'pay', 'chain', 'migrate']) expect(pkg.scripts[script], script).to.include('--import ./scripts/env-file.mjs');
    expect(pkg.scripts.test).to.not.match(/env-file|dotenv/);
    const mocharc = readFileSync(path.join(ROOT, '.mocharc.json'), 'utf8');
    expect(mocharc).to.not.match(/env-file|dotenv/);
    expect(Object.keys(require.cache).some((k) => /[\\/]dotenv[\\/]/.test(k))).to.equal(false);
  });
});

describe('npm start on a busy port', function () {
  this.timeout(90_000);
  const dbUrl = TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/$1_busy');
  after(async () => {
    const admin = postgres(TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/postgres'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${new URL(dbUrl).pathname.slice(1)}" with (force)`);
    await admin.end();
  });

  it('fails before any organization or key is created, naming the port', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const p = spawnEntry('scripts/start.ts', { DATABASE_URL: dbUrl, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: `${TEST_REDIS_PREFIX}busy`, PORT: String(port), START_LOCAL_CHAIN: 'false' });
      expect(await p.exited).to.equal(1);
      expect(p.stderr()).to.match(new RegExp(`Port ${port} is already in use`));
      expect(p.stdout() + p.stderr()).to.not.match(/pk_/);
      const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
      try {
        expect((await sql`select count(*)::int as n from organizations`)[0].n).to.equal(0);
      } finally {
        await sql.end();
      }
    } finally {
      blocker.close();
    }
  });
});

describe('.env.example', () => {
  it("states the API's and a worker's DATABASE_POOL_SIZE defaults as the code has them, as docs/configuration.md does", () => {
    const example = readFileSync(path.join(ROOT, '.env.example'), 'utf8');
    const configuration = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
    const { api, worker } = DEFAULT_DATABASE_POOL_SIZE;
    expect(example).to.match(new RegExp(`DATABASE_POOL_SIZE=.*default ${api} in an API process, ${worker} in a worker`));
    expect(configuration).to.match(new RegExp(`\\| \`DATABASE_POOL_SIZE\` \\| \`${api}\` in an API process, \`${worker}\` in a worker`));
  });

  it('lists every variable the configuration reads', () => {
    // The schema's variables, and any the reader still takes straight from the environment.
    const source = readFileSync(path.join(ROOT, 'core', 'platform', 'config.ts'), 'utf8');
    const names = new Set([...ENVIRONMENT_VARIABLES, ...[...source.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1])]);
    expect(names.size).to.be.greaterThan(40);
    const example = readFileSync(path.join(ROOT, '.env.example'), 'utf8');
    const listed = new Set([...example.matchAll(/^# ([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]));
    for (const name of names) expect(listed.has(name), `${name} in .env.example`).to.equal(true);
  });
});
