import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg } from '../helpers/harness';
import { createDashboardUser, csrfOf } from '../helpers/dashboard';

/**
 * The sign-in form as an outsider posts it: from another site, without the form's token, and one
 * client guessing across many accounts. None of these signs anyone in; the owner with the right
 * password from a client that has not failed always does (sign-in-throttle.test.ts has the
 * distributed guesser of one account).
 */
describe('dashboard sign-in as an outsider', function () {
  this.timeout(180_000);
  const t = buildTestApp({ env: { TRUST_PROXY: 'loopback' } });
  const origin = t.config.publicBaseUrl;
  const sessionSet = (res: request.Response) => ([] as string[]).concat(res.headers['set-cookie'] ?? []).some((c) => /^(__Host-)?sg_session=[^;]/.test(c));

  async function formOf(ip: string) {
    const agent = request.agent(t.app);
    const page = await agent.get('/dashboard/sign-in').set('X-Forwarded-For', ip);
    return { agent, csrf: csrfOf(page.text) };
  }

  it('the right password posted from another site, or without the form token, signs nobody in (403)', async () => {
    const org = await createTestOrg('Csrf Co');
    const owner = await createDashboardUser(org.organizationId, 'owner', 'owner@csrf-outsider.test');
    const ip = '192.0.2.120';
    const right = (csrf: string | undefined) => ({ ...(csrf === undefined ? {} : { _csrf: csrf }), email: owner.email, password: owner.password });
    const cases: [string, (f: Awaited<ReturnType<typeof formOf>>) => request.Test][] = [
      ['Origin of another site', (f) => f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Origin', 'https://evil.example').type('form').send(right(f.csrf))],
      ['Sec-Fetch-Site cross-site', (f) => f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Sec-Fetch-Site', 'cross-site').set('Origin', origin).type('form').send(right(f.csrf))],
      ['Referer of another site', (f) => f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Referer', 'https://evil.example/login').type('form').send(right(f.csrf))],
      ['no Origin nor Referer', (f) => f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).type('form').send(right(f.csrf))],
      ['no _csrf field', (f) => f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Origin', origin).type('form').send(right(undefined))],
      ['an empty _csrf field', (f) => f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Origin', origin).type('form').send(right(''))],
      ['another form\'s _csrf', (f) => f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Origin', origin).type('form').send(right(`${f.csrf.slice(0, -1)}${f.csrf.endsWith('A') ? 'B' : 'A'}`))],
      [
        'the token without its cookie',
        (f) => request(t.app).post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Origin', origin).type('form').send(right(f.csrf)),
      ],
      ['JSON instead of a form', (f) => f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Origin', origin).type('json').send(right(f.csrf))],
    ];
    for (const [name, send] of cases) {
      const res = await send(await formOf(ip));
      expect(res.status, name).to.be.oneOf([403, 415]);
      expect(sessionSet(res), name).to.equal(false);
    }
    // None of them counted as a failure of this client: its right password goes straight in.
    const f = await formOf(ip);
    const ok = await f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Origin', origin).type('form').send(right(f.csrf));
    expect(ok.status).to.equal(303);
    expect(sessionSet(ok)).to.equal(true);
  });

  it('one client guessing across many accounts is held after its free failures (per IP), the 429 page names no moment, and each owner still signs in from their own client', async () => {
    const org = await createTestOrg('Spray Co');
    const owner = await createDashboardUser(org.organizationId, 'owner', 'owner@spray-outsider.test');
    const guesser = '192.0.2.130';
    const statuses: number[] = [];
    let held: request.Response | undefined;
    // A password spray: one wrong password per account, 30 accounts, as fast as answers come.
    for (let i = 0; i < 30; i++) {
      const f = await formOf(guesser);
      const email = i === 0 ? owner.email : `nobody-${i}@spray-outsider.test`;
      const res = await f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', guesser).set('Origin', origin).type('form').send({ _csrf: f.csrf, email, password: 'Winter2026!' });
      statuses.push(res.status);
      if (res.status === 429) held = res;
    }
    expect(statuses.slice(0, 20)).to.deep.equal(Array(20).fill(401));
    expect(statuses.slice(20).filter((s) => s === 429).length, String(statuses)).to.be.greaterThan(0);
    expect(statuses.every((s) => s === 401 || s === 429)).to.equal(true);
    expect(held!.text).to.contain('Too many failed attempts');
    expect(held!.text).not.to.match(/\d+\s*(s|sec|seconds?|min|minutes?)\b/i);
    // The owner, from a client of their own, is not held by the guesser's failures.
    const f = await formOf('192.0.2.131');
    const ok = await f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', '192.0.2.131').set('Origin', origin).type('form').send({ _csrf: f.csrf, email: owner.email, password: owner.password });
    expect(ok.status).to.equal(303);
  });

  it('an IPv6 guesser walking the addresses of its /64 is one client: held after the free failures all the same', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 24; i++) {
      const ip = `2001:db8:99:1::${i.toString(16)}`;
      const f = await formOf(ip);
      const res = await f.agent.post('/dashboard/sign-in').set('X-Forwarded-For', ip).set('Origin', origin).type('form').send({ _csrf: f.csrf, email: `nobody-${i}@v6-outsider.test`, password: 'Winter2026!' });
      statuses.push(res.status);
    }
    expect(statuses.slice(0, 20)).to.deep.equal(Array(20).fill(401));
    expect(statuses.slice(20).filter((s) => s === 429).length, String(statuses)).to.be.greaterThan(0);
  });
});
