import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp } from '../helpers/harness';

describe('OpenAPI document: every status a route can answer', () => {
  const { app } = buildTestApp();
  let doc: any;
  before(async () => {
    doc = (await request(app).get('/api/v1/openapi.json')).body;
  });

  it('POST /orders lists 409 and 503 with their codes (not only in its description), and 413 for its body', () => {
    const responses = doc.paths['/api/v1/orders'].post.responses;
    expect(responses).to.include.keys('201', '400', '401', '403', '409', '413', '429', '503');
    expect(responses['409'].description).to.include('DUPLICATE_ORDER_REFERENCE');
    expect(responses['409'].description).to.include('IDEMPOTENCY_KEY_REUSED');
    expect(responses['503'].description).to.include('NO_AVAILABLE_ADDRESSES');
    expect(responses['503'].description).to.include('SERVICE_UNAVAILABLE');
    expect(responses['413'].description).to.include('PAYLOAD_TOO_LARGE');
    expect(responses['409'].content['application/json'].schema.$ref).to.equal('#/components/schemas/Error');
  });

  it('a route without a body has no 413; every code named in a description has its status', () => {
    expect(doc.paths['/api/v1/orders'].get.responses).to.not.have.property('413');
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        for (const m of `${op.summary} ${op.description ?? ''}`.matchAll(/\b([45]\d\d) ([A-Z][A-Z_]{3,})\b/g)) {
          expect(op.responses[m[1]]?.description, `${method} ${path} ${m[1]}`).to.include(m[2]);
        }
      }
    }
  });
});
