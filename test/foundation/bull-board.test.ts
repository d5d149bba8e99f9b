import { expect } from 'chai';
import request from 'supertest';
import { QUEUE_NAMES } from '../../core/jobs/catalog';
import { buildTestApp, createTestOrg } from '../helpers/harness';

describe('bull-board at /admin/queues', () => {
  const { app } = buildTestApp({ env: { OPERATOR_USER: 'ops', OPERATOR_PASSWORD: 'correct horse' } });
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  it('asks for operator credentials and refuses wrong ones', async () => {
    const none = await request(app).get('/admin/queues');
    expect(none.status).to.equal(401);
    expect(none.headers['www-authenticate']).to.match(/^Basic/);
    expect((await request(app).get('/admin/queues').set('Authorization', basic('ops', 'wrong'))).status).to.equal(401);
  });

  it("does not accept an organization's API key, even an Owner's", async () => {
    const org = await createTestOrg('Not an operator');
    expect((await request(app).get('/admin/queues').set('Authorization', `Bearer ${org.ownerKey}`)).status).to.equal(401);
    expect((await request(app).get('/admin/queues').set('X-API-Key', org.ownerKey)).status).to.equal(401);
  });

  it('shows every queue of the job catalog to an operator', async () => {
    const page = await request(app).get('/admin/queues').set('Authorization', basic('ops', 'correct horse'));
    expect(page.status).to.equal(200);
    expect(page.text).to.include('<html');
    const api = await request(app).get('/admin/queues/api/queues').set('Authorization', basic('ops', 'correct horse'));
    expect(api.status).to.equal(200);
    const names = (api.body.queues as { name: string }[]).map((q) => q.name).sort();
    expect(names).to.deep.equal([...QUEUE_NAMES].sort());
  });

  it('is off without OPERATOR_PASSWORD', async () => {
    const { app: closed } = buildTestApp({ env: { OPERATOR_PASSWORD: '' } });
    const res = await request(closed).get('/admin/queues').set('Authorization', basic('operator', ''));
    expect(res.status).to.equal(503);
  });
});
