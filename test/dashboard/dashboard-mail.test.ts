import { createServer, type AddressInfo } from 'node:net';
import { expect } from 'chai';
import { SMTPServer } from 'smtp-server';
import { buildTestApp, createTestOrg, knownSecrets, type TestOrg } from '../helpers/harness';
import { createDashboardUser, csrfOf, dashboardClient } from '../helpers/dashboard';

/** One-time links by e-mail when the deployment has SMTP_URL: invitations and "e-mail me a sign-in link". */
describe('dashboard: one-time links by e-mail', function () {
  this.timeout(60_000);
  const received: { to: string[]; raw: string }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (c: Buffer) => (raw += c.toString()));
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  let t: ReturnType<typeof buildTestApp>;
  let org: TestOrg;
  let owner: { email: string; password: string };

  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.server.address() as AddressInfo).port;
    t = buildTestApp({ env: { SMTP_URL: `smtp://127.0.0.1:${port}`, SMTP_FROM: 'Stablegate <noreply@example.com>' } });
    org = await createTestOrg('Mail Co');
    owner = await createDashboardUser(org.organizationId, 'owner', 'owner@mail.test');
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const linkIn = (raw: string) => {
    const m = /(http:\/\/[^\s]+\/dashboard\/link\/[A-Za-z0-9_-]+)/.exec(raw.replace(/=\r?\n/g, ''));
    if (!m) throw new Error(`no link in the message:\n${raw}`);
    knownSecrets.add(new URL(m[1]).pathname.split('/').at(-1)!);
    return new URL(m[1]).pathname;
  };

  it('e-mails an invitation instead of showing its link, and the link signs the new member in', async () => {
    const c = dashboardClient(t.app, t.config.publicBaseUrl);
    await c.signIn(owner.email, owner.password);
    const res = await c.post('/dashboard/settings/members', { _csrf: await c.csrf(), email: 'invitee@mail.test', role: 'viewer' });
    expect(res.status).to.equal(201);
    expect(res.text).to.contain('e-mailed').and.not.contain('/dashboard/link/');
    const mail = received.find((m) => m.to.includes('invitee@mail.test'))!;
    expect(mail.raw).to.contain('Mail Co');
    const path = linkIn(mail.raw);
    const n = dashboardClient(t.app, t.config.publicBaseUrl);
    const confirm = await n.get(path);
    expect((await n.post(path, { _csrf: csrfOf(confirm.text) })).status).to.equal(303);
    expect((await n.get('/dashboard/account')).text).to.contain('data-role="viewer"');
  });

  it('e-mails a sign-in link on request, answers the same for an unknown address, and limits requests per address', async () => {
    const c = dashboardClient(t.app, t.config.publicBaseUrl);
    const page = await c.get('/dashboard/sign-in');
    expect(page.text).to.contain('E-mail me a sign-in link');
    const ask = (email: string) => c.post('/dashboard/sign-in/email', { _csrf: csrfOf(page.text), email });
    const before = received.length;
    const known = await ask(owner.email);
    const unknown = await ask('nobody@mail.test');
    expect(known.status).to.equal(200);
    expect(unknown.status).to.equal(200);
    expect(unknown.text.replace('nobody@mail.test', owner.email)).to.equal(known.text);
    expect(received.length).to.equal(before + 1);
    const path = linkIn(received.at(-1)!.raw);
    const confirm = await c.get(path);
    expect((await c.post(path, { _csrf: csrfOf(confirm.text) })).status).to.equal(303);
    expect((await c.get('/dashboard')).status).to.equal(200);
    // Three links per address per 15 minutes: the fourth request is refused until then.
    const other = dashboardClient(t.app, t.config.publicBaseUrl);
    const form = await other.get('/dashboard/sign-in');
    const again = () => other.post('/dashboard/sign-in/email', { _csrf: csrfOf(form.text), email: owner.email });
    expect((await again()).status).to.equal(200);
    expect((await again()).status).to.equal(200);
    expect((await again()).status).to.equal(429);
  });
  it('refuses a sign-in link request without the sign-in form\'s token or from another site, and sends nothing', async () => {
    const c = dashboardClient(t.app, t.config.publicBaseUrl);
    const page = await c.get('/dashboard/sign-in');
    const before = received.length;
    for (const res of [
      await c.post('/dashboard/sign-in/email', { email: owner.email }),
      await c.post('/dashboard/sign-in/email', { _csrf: 'A'.repeat(43), email: owner.email }),
      await c.agent.post('/dashboard/sign-in/email').set('Origin', 'https://evil.example').type('form').send({ _csrf: csrfOf(page.text), email: owner.email }),
      await c.agent.post('/dashboard/sign-in/email').type('form').send({ _csrf: csrfOf(page.text), email: owner.email }),
    ]) {
      expect(res.status, res.text).to.equal(403);
    }
    expect(received.length).to.equal(before);
  });

  it('answers a sign-in link request the same for a known and an unknown address when the mail server is down', async () => {
    // A port nothing listens on: every send fails at once.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const user = await createDashboardUser(org.organizationId, 'member', 'member@mail.test');
    const down = buildTestApp({ env: { SMTP_URL: `smtp://127.0.0.1:${port}`, SMTP_FROM: 'Stablegate <noreply@example.com>' } });
    const c = dashboardClient(down.app, down.config.publicBaseUrl);
    const page = await c.get('/dashboard/sign-in');
    const ask = (email: string) => c.post('/dashboard/sign-in/email', { _csrf: csrfOf(page.text), email });
    const known = await ask(user.email);
    const unknown = await ask('nobody-else@mail.test');
    expect(unknown.status).to.equal(200);
    // A 500 for known addresses only would tell anyone which addresses have an account.
    expect(known.status, known.text).to.equal(200);
    expect(unknown.text.replace('nobody-else@mail.test', user.email)).to.equal(known.text);
  });
});
