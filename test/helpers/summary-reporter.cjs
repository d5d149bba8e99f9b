'use strict';
// Mocha's spec reporter plus closing lines in the plain form CI reads: "N passed, N failed, N skipped",
// and how long each part of the suite took (test/parts/parts.cjs), so every run publishes the
// figures docs/testing.md quotes: the files run one after another, so a part's share of this run is
// what `npm run test:<part>` takes alone, less its start-up.
const path = require('node:path');
const Mocha = require('mocha');
const { partOf } = require('../parts/parts.cjs');
const { Spec } = Mocha.reporters;
const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END } = Mocha.Runner.constants;

class SummaryReporter extends Spec {
  constructor(runner, options) {
    super(runner, options);
    /** Per part: milliseconds and files. */
    const parts = new Map();
    const started = new Map();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent && suite.parent.root) started.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const t0 = started.get(suite);
      if (t0 === undefined) return;
      started.delete(suite);
      const part = partOf(path.relative(process.cwd(), suite.file));
      const p = parts.get(part) || { ms: 0, files: new Set() };
      p.ms += Date.now() - t0;
      p.files.add(suite.file);
      parts.set(part, p);
    });
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || {};
      const byPart = [...parts].map(([name, p]) => `${name} ${Math.round(p.ms / 1000)} s (${p.files.size} files)`).join(', ');
      if (byPart) process.stdout.write(`\ntime by part: ${byPart}`);
      process.stdout.write(`\n${s.passes || 0} passed, ${s.failures || 0} failed, ${s.pending || 0} skipped\n`);
    });
  }
}
module.exports = SummaryReporter;
