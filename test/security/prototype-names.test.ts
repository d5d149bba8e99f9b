import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp } from '../helpers/harness';

/** The names every plain object answers from its prototype: a lookup by a URL's name must not. */
const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf'];

/**
 * Public lookups by a name from the URL answer 404 in the deployment's error format for any name
 * they do not serve, prototype names included (issue 37: the docs assets answered 500).
 */
describe('public lookups by name: prototype names are not found, never a 500', function () {
  this.timeout(60_000);
  const t = buildTestApp();

  it('GET /api/v1/docs/assets/<name>: 404 in the error format', async () => {
    for (const name of PROTOTYPE_NAMES) {
      const res = await request(t.app).get(`/api/v1/docs/assets/${name}`);
      expect(res.status, name).to.equal(404);
      expect(res.headers['content-type'], name).to.match(/^application\/json/);
      expect(JSON.stringify(res.body), name).to.match(/not found/i);
    }
    // What it serves still answers.
    expect((await request(t.app).get('/api/v1/docs/assets/docs-init.js')).status).to.equal(200);
  });

  it('the public pages: static assets, payment pages, checkout links and sign-in links answer 404; a language of that name falls back', async () => {
    for (const name of PROTOTYPE_NAMES) {
      for (const path of [`/static/${name}`, `/pay/${name}`, `/l/${name}`, `/dashboard/link/${name}`]) {
        expect((await request(t.app).get(path)).status, path).to.equal(404);
      }
      const page = await request(t.app).get(`/dashboard/sign-in?lang=${name}`).set('Accept-Language', name);
      expect(page.status, `?lang=${name}`).to.equal(200);
      expect(page.text).to.match(/<html lang="en"/);
    }
  });
});
