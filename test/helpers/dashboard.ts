import request from 'supertest';
import type { App } from '../../api/app';
import { knownSecrets, testDb } from './harness';
import { putMembershipAsOperator, setPassword } from '../../core/users/users';
import type { Role } from '../../core/organizations/roles';

/** A dashboard user with a password, member of the organization with the role (made as the operator would). */
export async function createDashboardUser(organizationId: string, role: Role, email: string, password = `pw-${email}-${Math.random().toString(36).slice(2)}`) {
  const { user } = await putMembershipAsOperator(testDb(), organizationId, email, role);
  await setPassword(testDb(), user.id, password);
  knownSecrets.add(password);
  return { userId: user.id, email, password };
}

/** The CSRF token of the first form of a page (every dashboard form carries the same one). */
export function csrfOf(pageHtml: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(pageHtml);
  if (!m) throw new Error('no CSRF field on the page');
  return m[1];
}

export function sessionCookieOf(res: request.Response): string | null {
  const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const c = cookies.find((x) => x.startsWith('sg_session=') && !x.startsWith('sg_session=;'));
  return c ? c.split(';')[0].slice('sg_session='.length) : null;
}

/** A browser-like client: keeps cookies, sends the Origin a same-site form post carries. */
export function dashboardClient(app: App, origin: string) {
  const agent = request.agent(app);
  return {
    agent,
    get: (path: string) => agent.get(path),
    /** A form post from our own page (Origin of the service). */
    post: (path: string, form: Record<string, string | string[]>) => agent.post(path).set('Origin', origin).type('form').send(form),
    async signIn(email: string, password: string): Promise<request.Response> {
      const page = await agent.get('/dashboard/sign-in');
      return agent.post('/dashboard/sign-in').set('Origin', origin).type('form').send({ _csrf: csrfOf(page.text), email, password });
    },
    async csrf(path = '/dashboard/account'): Promise<string> {
      return csrfOf((await agent.get(path)).text);
    },
  };
}
