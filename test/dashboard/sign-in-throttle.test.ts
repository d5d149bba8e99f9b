import { expect } from 'chai';
import request from 'supertest';
import { createProducerRedis } from '../../core/platform/redis';
import { buildTestApp, createTestOrg } from '../helpers/harness';
import { createDashboardUser, csrfOf } from '../helpers/dashboard';

/**
 * The README's promise under a distributed password guesser (issue 37): an attacker can slow an
 * account down, never lock its owner out. The guesser sends wrong passwords from many client IPs
 * (X-Forwarded-For through a trusted proxy), each the moment its delay ends; the owner, from a
 * client that has not failed, signs in with the right password throughout.
 */
describe('dashboard sign-in under a distributed guesser', function () {
  this.timeout(300_000);
  const t = buildTestApp({ env: { TRUST_PROXY: 'loopback' } });
  const origin = t.config.publicBaseUrl;

  /** One browser at one client IP: the sign-in page, then the form post. */
  async function signIn(ip: string, email: string, password: string) {
    const agent = request.agent(t.app);
    const page = await agent.get('/dashboard/sign-in').set('X-Forwarded-For', ip);
    return agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Origin', origin).type('form').send({ _csrf: csrfOf(page.text), email, password });
  }

  it('the owner with the right password signs in every time; the guesser is slowed, and the page never names the moment to retry', async () => {
    const org = await createTestOrg('Guessed Co');
    const owner = await createDashboardUser(org.organizationId, 'owner', 'owner@guessed.test');
    // The account-wide count past its 10 free failures: 12 wrong guesses from 12 IPs.
    for (let i = 0; i < 12; i++) expect((await signIn(`198.51.100.${i}`, owner.email, `guess-${i}`)).status).to.equal(401);

    const ownerAnswers: number[] = [];
    const guesses: number[] = [];
    for (let round = 0; round < 8; round++) {
      // A fresh IP's guess re-arms the account's delay just before the owner tries.
      const fresh = `203.0.113.${round}`;
      expect((await signIn(fresh, owner.email, `again-${round}`)).status).to.equal(401);
      ownerAnswers.push((await signIn('192.0.2.10', owner.email, owner.password)).status);
      // The IP that just guessed is held for the account's delay: its next guess is not even checked.
      const held = await signIn(fresh, owner.email, `more-${round}`);
      guesses.push(held.status);
      expect(held.text).to.contain('Too many failed attempts');
      expect(held.text).not.to.match(/\d+\s*seconds?/);
    }
    expect(ownerAnswers).to.deep.equal(Array(8).fill(303));
    expect(guesses).to.deep.equal(Array(8).fill(429));
    // The owner's sign-ins did not forgive the guesses: an old guessing IP is held too once it guesses again.
    expect((await signIn('198.51.100.0', owner.email, 'guess-again')).status).to.equal(401);
    expect((await signIn('198.51.100.0', owner.email, 'and-again')).status).to.equal(429);
  });

  it('a client that failed is held by its own delays, even with the right password', async () => {
    const org = await createTestOrg('Typo Co');
    const user = await createDashboardUser(org.organizationId, 'owner', 'typo@guessed.test');
    for (let i = 0; i < 6; i++) expect((await signIn('192.0.2.77', user.email, `typo-${i}`)).status).to.equal(401);
    const held = await signIn('192.0.2.77', user.email, user.password);
    expect(held.status).to.equal(429);
    expect(Number(held.headers['retry-after'])).to.be.within(1, 2);
    // Another client of the same person is not held by it.
    expect((await signIn('192.0.2.78', user.email, user.password)).status).to.equal(303);
  });

  it('fails closed: while Redis cannot be reached, a sign-in is refused with a clear 503, even with the right password', async () => {
    const org = await createTestOrg('No Redis Co');
    const user = await createDashboardUser(org.organizationId, 'owner', 'noredis@guessed.test');
    let res: request.Response;
    const unreachable = createProducerRedis('redis://127.0.0.1:1');
    unreachable.on('error', () => {});
    try {
      const down = buildTestApp({ env: { TRUST_PROXY: 'loopback' }, redis: unreachable });
      const agent = request.agent(down.app);
      const page = await agent.get('/dashboard/sign-in');
      res = await agent.post('/dashboard/sign-in').set('Origin', down.config.publicBaseUrl).type('form').send({ _csrf: csrfOf(page.text), email: user.email, password: user.password });
    } finally {
      unreachable.disconnect();
    }
    expect(res.status).to.equal(503);
    expect(Number(res.headers['retry-after'])).to.be.greaterThan(0);
    expect(res.text).to.contain('Sign-in is unavailable for a moment');
    expect(res.headers['set-cookie'] ?? []).to.satisfy((cookies: string[]) => !cookies.some((c) => c.startsWith('sg_session=') && !c.startsWith('sg_session=;')));
  });
});
