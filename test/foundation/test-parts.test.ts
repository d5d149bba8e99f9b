import { readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
// The parts' configs are plain CommonJS so mocha reads them without tsx.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { PARTS } = require('../parts/parts.cjs') as { PARTS: Record<string, { spec: string[]; ignore: string[] }> };

const ROOT = path.resolve(__dirname, '../..');

/** A mocha glob as a regular expression over repository-relative paths (`**`, `*` only). */
function globRegExp(glob: string): RegExp {
  const body = glob
    .split('/')
    .map((seg) => (seg === '**' ? '(?:.*/)?' : `${seg.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}/`))
    .join('');
  return new RegExp(`^${body.replace(/\(\?:\.\*\/\)\?\/?$/, '.*').replace(/\/$/, '')}$`);
}

function partsOf(file: string): string[] {
  return Object.entries(PARTS)
    .filter(([, { spec, ignore }]) => spec.some((g) => globRegExp(g).test(file)) && !ignore.some((g) => globRegExp(g).test(file)))
    .map(([name]) => name);
}

/**
 * The suite's parts (npm run test:api, test:chains, test:ops, test:browser; test/parts/): together
 * they are `npm test`, so a new test file or folder lands in exactly one of them, never in none.
 */
describe('the suite in parts', () => {
  it('places a file by its folder and browser files apart (the check itself can fail)', () => {
    expect(partsOf('test/orders/orders-api.test.ts')).to.deep.equal(['api']);
    expect(partsOf('test/a-new-folder/x.test.ts')).to.deep.equal(['api']);
    expect(partsOf('test/tron/tron-http.test.ts')).to.deep.equal(['chains']);
    expect(partsOf('test/ops/build.test.ts')).to.deep.equal(['ops']);
    expect(partsOf('test/pages/pay-page.browser.test.ts')).to.deep.equal(['browser']);
    expect(partsOf('test/evm/x.browser.test.ts')).to.deep.equal(['browser']);
    expect(partsOf('test/helpers/harness.ts')).to.deep.equal([]);
  });

  it('puts every test file in exactly one part', () => {
    const files = readdirSync(path.join(ROOT, 'test'), { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile() && e.name.endsWith('.test.ts'))
      .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
    expect(files.length).to.be.greaterThan(100);
    const misplaced = files.map((f) => ({ f, parts: partsOf(f) })).filter(({ parts }) => parts.length !== 1);
    expect(misplaced).to.deep.equal([]);
  });
});
