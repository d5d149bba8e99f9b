import { expect } from 'chai';
import { safeErrorSerializer } from '../core/logger';
import { capturedLogLines, knownSecrets } from './helpers/harness';

/**
 * Runs last (file order): every log line written by every app and worker built during this run
 * is searched for secrets.
 */
describe('logs of this test run', () => {
  it('have one structured line per request, with a request id', () => {
    const requests = capturedLogLines.map((l) => JSON.parse(l)).filter((l) => l.req && l.res);
    expect(requests.length).to.be.greaterThan(50);
    for (const line of requests) {
      expect(line.req.id).to.be.a('string').and.not.equal('');
      expect(line).to.have.property('responseTime');
    }
  });

  it('contain no API key nor any other secret seen during the run', () => {
    const all = capturedLogLines.join('');
    expect(all).to.not.match(/pk_[A-Za-z0-9_-]{40,}/);
    expect(knownSecrets.size).to.be.greaterThan(10);
    for (const secret of knownSecrets) expect(all.includes(secret), 'a secret appears in the logs').to.equal(false);
  });
});

describe('error logging', () => {
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
