import { setUpTestRun, tearDownTestRun } from './harness';

/** Mocha root hooks: one database and Redis prefix for the whole run, removed afterwards. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(60_000);
    await setUpTestRun();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await tearDownTestRun();
  },
};
