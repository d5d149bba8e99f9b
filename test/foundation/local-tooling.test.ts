import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { closedPort, ROOT, spawnEntry } from '../helpers/processes';

/**
 * The production image leaves the local chain's tooling out (scripts/local-chain/ via
 * .dockerignore, anvil and solc via --omit=dev). Such an installation refuses NETWORK=local with one
 * line, before it connects to anything, and still runs every other network.
 */
describe('an installation without the local-chain tooling (the image)', function () {
  this.timeout(60_000);
  let tree: string;

  before(() => {
    tree = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-image-tree-'));
    for (const dir of ['api', 'core', 'db', 'workers', 'scripts']) {
      fs.cpSync(path.join(ROOT, dir), path.join(tree, dir), { recursive: true, filter: (src) => !src.startsWith(path.join(ROOT, 'scripts', 'local-chain')) });
    }
    for (const file of ['package.json', 'tsconfig.json']) fs.copyFileSync(path.join(ROOT, file), path.join(tree, file));
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(tree, 'node_modules'));
  });
  after(() => fs.rmSync(tree, { recursive: true, force: true }));

  it('is what the Docker build context gives: .dockerignore leaves scripts/local-chain out', () => {
    const ignored = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    expect(ignored).to.include('scripts/local-chain');
  });

  it('refuses NETWORK=local in one line, before connecting to the database', async () => {
    const port = await closedPort();
    const api = spawnEntry(path.join(tree, 'api/main.ts'), { NETWORK: 'local', DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/none` });
    expect(await api.exited).to.equal(1);
    const lines = api.stderr().trim().split('\n');
    expect(lines, api.stderr()).to.have.length(1);
    expect(lines[0]).to.match(/^NETWORK=local needs the development tooling \(scripts\/local-chain\/ is missing in this installation\): set NETWORK=testnet or NETWORK=mainnet/);
  });

  it('still starts `npm start` on another network (the tooling is loaded only for NETWORK=local)', async () => {
    const port = await closedPort();
    const start = spawnEntry(path.join(tree, 'scripts/start.ts'), {
      NETWORK: 'testnet',
      SECRET_ENCRYPTION_KEY: 'ab'.repeat(32),
      PUBLIC_BASE_URL: 'https://pay.example.com',
      DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/none`,
    });
    expect(await start.exited).to.equal(1);
    // It got as far as the database: no missing module on the way.
    expect(start.stderr()).to.match(/^Cannot reach PostgreSQL/);
  });
});

/**
 * `npm ci --omit=dev` (the image's install, Dockerfile) leaves out exactly the packages the lock file
 * marks `"dev": true`: solc, anvil and anvil's per-platform binaries must be among them, and not
 * among the runtime dependencies.
 */
describe('npm ci --omit=dev installs neither solc nor anvil', () => {
  const TOOLING = ['solc', '@foundry-rs/anvil'];
  const read = (file: string) => JSON.parse(fs.readFileSync(path.join(ROOT, file), 'utf8'));

  it('the image installs with --omit=dev', () => {
    expect(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')).to.match(/^RUN npm ci --omit=dev\b/m);
  });

  it('package.json and package-lock.json list solc and anvil as devDependencies only', () => {
    const pkg = read('package.json');
    const lock = read('package-lock.json');
    const root = lock.packages[''];
    for (const name of TOOLING) {
      expect(pkg.dependencies ?? {}, `package.json dependencies: ${name}`).to.not.have.property(name);
      expect(pkg.devDependencies ?? {}, `package.json devDependencies: ${name}`).to.have.property(name);
      expect(root.dependencies ?? {}, `package-lock.json dependencies: ${name}`).to.not.have.property(name);
      expect(root.devDependencies ?? {}, `package-lock.json devDependencies: ${name}`).to.have.property(name);
      expect(root.optionalDependencies ?? {}, `package-lock.json optionalDependencies: ${name}`).to.not.have.property(name);
    }
  });

  it('every installed copy of them (nested ones too) and of anvil\'s platform packages is dev-only in the lock file', () => {
    const packages: Record<string, { dev?: boolean }> = read('package-lock.json').packages;
    // node_modules/solc, node_modules/solc/node_modules/…, node_modules/@foundry-rs/anvil-linux-amd64, …
    const tooling = Object.keys(packages).filter((p) => /(^|\/)node_modules\/(solc|@foundry-rs\/anvil)(-[a-z0-9]+-[a-z0-9]+)?(\/|$)/.test(p));
    expect(tooling).to.include.members(['node_modules/solc', 'node_modules/@foundry-rs/anvil']);
    expect(tooling.filter((p) => p.startsWith('node_modules/@foundry-rs/anvil-')), 'anvil platform packages').to.not.be.empty;
    const notDev = tooling.filter((p) => packages[p].dev !== true);
    expect(notDev, 'installed by npm ci --omit=dev').to.deep.equal([]);
  });
});
