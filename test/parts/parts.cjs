// The suite in parts (issue 38): each part is a mocha config with the same root hooks, reporter and
// timeout as .mocharc.json (so `npm test` and a part run a file the same way), and its own files.
// Every test file is in exactly one part (test/foundation/test-parts.test.ts checks it), so the
// parts together are `npm test`.
const base = require('../../.mocharc.json');

const BROWSER = 'test/**/*.browser.test.ts';
const CHAINS = ['evm', 'tron', 'solana', 'detection', 'sim'];
const OPS = ['ops'];

/** Each part's spec globs and ignored globs. `api` is every other folder, without browser tests. */
const PARTS = {
  api: { spec: ['test/**/*.test.ts'], ignore: [BROWSER, ...[...CHAINS, ...OPS].map((d) => `test/${d}/**`)] },
  chains: { spec: CHAINS.map((d) => `test/${d}/**/*.test.ts`), ignore: [BROWSER] },
  ops: { spec: OPS.map((d) => `test/${d}/**/*.test.ts`), ignore: [BROWSER] },
  browser: { spec: [BROWSER], ignore: [] },
};

/** The part a test file (path relative to the root) belongs to, by the same folders as PARTS. */
function partOf(file) {
  const f = file.split(require('node:path').sep).join('/');
  if (f.endsWith('.browser.test.ts')) return 'browser';
  const folder = f.split('/')[1];
  if (CHAINS.includes(folder)) return 'chains';
  if (OPS.includes(folder)) return 'ops';
  return 'api';
}

function configFor(part) {
  const { spec, ignore } = PARTS[part];
  return { ...base, spec, ignore };
}

module.exports = { PARTS, configFor, partOf };
