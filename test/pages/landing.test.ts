import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp } from '../helpers/harness';
import { SERVICE_VERSION } from '../../core/platform/version';

describe('landing page (GET /)', () => {
  const { app } = buildTestApp();

  it('names the service and its version and links the API reference, the OpenAPI document and health, as a public page', async () => {
    const res = await request(app).get('/').set('Accept', 'text/html');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.match(/text\/html/);
    expect(res.text).to.include('<h1>Stablegate</h1>');
    expect(res.text).to.include(SERVICE_VERSION);
    for (const href of ['/dashboard', '/api/v1/docs', '/api/v1/openapi.json', '/health']) expect(res.text).to.include(`href="${href}"`);
    expect(res.text).to.not.match(/Cannot GET/);
    // The public pages' headers: strict CSP, only our own assets.
    expect(res.headers['content-security-policy']).to.include("default-src 'none'");
    expect(res.text).to.not.match(/(src|href)="https?:\/\//);
    for (const link of ['/api/v1/docs', '/api/v1/openapi.json', '/health']) {
      const target = await request(app).get(link);
      expect(target.status, link).to.equal(200);
    }
  });

  it('answers JSON to a client that asks for it', async () => {
    const res = await request(app).get('/').set('Accept', 'application/json');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.include({ service: 'Stablegate', version: SERVICE_VERSION });
    expect(res.body.links['API reference']).to.equal('/api/v1/docs');
  });
});
