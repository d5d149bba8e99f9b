import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');
const CLIENT_DIR = path.join(ROOT, 'clients', 'typescript');
const run = promisify(execFile);

/**
 * clients/typescript/README.md's install, as a user's project does it: `npm install` of the
 * client's folder (npm links it as @stablegate/client), then an import by that name, run with tsx.
 * Offline: the link needs nothing from the registry.
 */
describe('the typed client installs the way its README says', function () {
  this.timeout(180_000);
  const project = mkdtempSync(path.join(os.tmpdir(), 'sg-client-user-'));
  after(() => rmSync(project, { recursive: true, force: true }));

  it('names the package @stablegate/client, and the README installs and imports it under that name', () => {
    expect(JSON.parse(readFileSync(path.join(CLIENT_DIR, 'package.json'), 'utf8')).name).to.equal('@stablegate/client');
    const readme = readFileSync(path.join(CLIENT_DIR, 'README.md'), 'utf8');
    expect(readme).to.include('npm install <path to your Stablegate checkout>/clients/typescript');
    expect(readme).to.include("from '@stablegate/client'");
  });

  it('npm install <folder> then `import … from "@stablegate/client"` resolves and runs', async () => {
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'shop', version: '1.0.0', private: true }));
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', CLIENT_DIR], { cwd: project });
    writeFileSync(
      path.join(project, 'shop.ts'),
      [
        "import { createStablegateClient, verifyWebhook, WebhookVerificationError } from '@stablegate/client';",
        "const sg = createStablegateClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'pk_x' });",
        "let refused = false; try { verifyWebhook('{}', '00', 'whsec_x'); } catch (e) { refused = e instanceof WebhookVerificationError; }",
        'console.log(JSON.stringify({ get: typeof sg.GET, refused }));',
      ].join('\n'),
    );
    const { stdout } = await run(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['shop.ts'], { cwd: project });
    expect(JSON.parse(stdout.trim())).to.deep.equal({ get: 'function', refused: true });
  });
});
