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
