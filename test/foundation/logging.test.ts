import { expect } from 'chai';
import request from 'supertest';
import { safeErrorSerializer } from '../../core/platform/logger';
import { buildTestApp, capturedLogLines, checkLogLines, createTestOrg, knownSecrets } from '../helpers/harness';

/**
 * Whether any secret reached the logs is checked after each test file and at the end of the run
 * (test/helpers/root-hooks.ts, checkLogLines). These tests show that check is not vacuous.
 */
describe('logging', () => {
  const { app } = buildTestApp({ style: 'b' });

  it('captures one structured line per request, with a request id, and records the keys handed out', async () => {
    const org = await createTestOrg('logging org');
    expect(knownSecrets.has(org.ownerKey)).to.equal(true);
    const mark = capturedLogLines.length;
    await request(app).get('/api/v1/organizations').set('X-API-Key', org.ownerKey).expect(200);
    const requests = capturedLogLines.slice(mark).map((l) => JSON.parse(l)).filter((l) => l.req && l.res);
    expect(requests).to.have.length(1);
    expect(requests[0].req.id).to.be.a('string').and.not.equal('');
    expect(requests[0]).to.have.property('responseTime');
    expect(() => checkLogLines(capturedLogLines.slice(mark))).to.not.throw();
  });

  it('the log check fails on a secret handed out during the run, and on a line that looks like an API key', async () => {
    const org = await createTestOrg('leaky org');
    const leaked = JSON.stringify({ level: 30, msg: 'oops', value: org.keys.viewer });
    expect(() => checkLogLines([leaked])).to.throw(/appears in the logs/);
    expect(() => checkLogLines([JSON.stringify({ msg: `pk_${'a'.repeat(43)}` })])).to.throw(/API key appears/);
  });

  it('never writes a driver error\'s query parameters or row details', () => {
    const err = Object.assign(new Error('duplicate key value violates unique constraint'), {
      code: '23505',
      parameters: ['pk_secret_value'],
      query: 'insert into x values ($1)',
      detail: 'Key (k)=(pk_secret_value) already exists.',
    });
    const logged = JSON.stringify(safeErrorSerializer(err));
    expect(logged).to.include('23505').and.include('duplicate key');
    expect(logged).to.not.include('pk_secret_value');
  });
});
