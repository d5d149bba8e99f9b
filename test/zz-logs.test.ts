import { expect } from 'chai';
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
