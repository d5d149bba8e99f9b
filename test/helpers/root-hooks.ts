import { capturedLogLines, checkLogLines, setUpTestFile, setUpTestRun, tearDownTestFile, tearDownTestRun } from './harness';

/**
 * Mocha root hooks: the run's template database and Redis prefix, one database per test file
 * (hooks added to each file's first and last top-level suite once all files are loaded), and the
 * log checks: per file, and over the whole run at its end.
 */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    await setUpTestRun();
    addPerFileHooks(this.test!.parent!);
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(120_000);
    try {
      // Lines written after a file's own check (a worker closing late) are checked here.
      checkLogLines(capturedLogLines);
    } finally {
      await tearDownTestRun();
    }
  },
};


function addPerFileHooks(root: Mocha.Suite): void {
  const lastSuiteOfFile = new Map<string, Mocha.Suite>();
  for (const suite of root.suites) if (suite.file) lastSuiteOfFile.set(suite.file, suite);
  for (const suite of root.suites) {
    const file = suite.file;
    if (!file) continue;
    // On every top-level suite (idempotent per file), so a suite that --grep leaves alone changes nothing.
    suite.beforeAll(`test database of ${file}`, async function (this: Mocha.Context) {
      this.timeout(60_000);
      await setUpTestFile(file);
    });
    // mocha keeps a suite's before-all hooks in this array: the file's database comes before its own hooks.
    const hooks = (suite as unknown as { _beforeAll: Mocha.Hook[] })._beforeAll;
    hooks.unshift(hooks.pop()!);
    if (lastSuiteOfFile.get(file) === suite) {
      suite.afterAll(`logs and database of ${file}`, async function (this: Mocha.Context) {
        this.timeout(60_000);
        await tearDownTestFile();
      });
    }
  }
}
