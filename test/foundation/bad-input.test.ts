import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, STYLES, type TestOrg } from '../helpers/harness';
import { randomEvmAddress } from '../helpers/pool';

/**
 * Every declared route, fed malformed input by a key allowed to call it, answers with a clear
 * 4xx in the deployment's format — never a 500.
 */
/** Text Postgres cannot store: a NUL character (text) and an unpaired surrogate (jsonb). */
const UNSTORABLE = ['a\u0000b', 'a\ud800b'];
const unstorableBodies = UNSTORABLE.flatMap((bad) => [
  // Otherwise valid bodies of the creating routes, so the bad text would reach the database.
  { orderReference: bad, amount: '1', currency: 'USDT', chainId: 'ethereum-local' },
  { orderReference: `ok-${bad.length}`, amount: '1', currency: 'USDT', chainId: 'ethereum-local', metadata: { note: bad } },
  { orderReference: 'ok-key', amount: '1', currency: 'USDT', chainId: 'ethereum-local', metadata: { [bad]: 'v' } },
  { depositReference: bad, protocol: 'evm', chainId: 'ethereum-local' },
  { name: bad, role: 'member' },
  { url: `https://example.com/${bad}`, events: ['order.completed'], description: bad },
  { value: `https://example.com/${bad}` },
  { name: bad },
]);
const BODIES: unknown[] = [{}, [], 'text', 42, null, { unknown: 1 }, { depositReference: { nested: true }, amount: 10, url: 7, events: 'x', value: [] }, ...unstorableBodies];
const QUERIES = ['?page=abc', '?limit=-1', '?limit=1000', '?sortBy=nope', '?sortOrder=sideways', '?status=weird&currency=XYZ&chainId=nope', '?page=1&page=2', '?page=99999999999999999999', '?orderReference=a%00b', '?depositReference=a%00b&status=%00'];
const PARAMS = ['x', `${'a'.repeat(300)}`, '%E2%9C%93', 'ord_00000000000000000000000000', '..%2F..', 'a%00b'];

for (const style of STYLES) {
  describe(`malformed input never gets a 500 (style ${style.toUpperCase()})`, function () {
    this.timeout(60_000);
    const tokens = { TOKEN_ETHEREUM_LOCAL_USDT: randomEvmAddress(), TOKEN_ETHEREUM_LOCAL_USDC: randomEvmAddress(), TOKEN_ETHEREUM_LOCAL_DAI: randomEvmAddress() };
    const { app } = buildTestApp({ style, env: tokens });
    let org: TestOrg;
    before(async () => {
      org = await createTestOrg(`bad input ${style}`);
    });

    it('for every route of the route table', async () => {
      const failures: string[] = [];
      const check = async (label: string, res: request.Response) => {
        if (res.status >= 500) failures.push(`${label} → ${res.status} ${JSON.stringify(res.body)}`);
        else if (res.status >= 400) {
          // The deployment's error format.
          if (style === 'b') expect(res.body, label).to.include.keys('code', 'statusCode', 'message');
          else expect(res.body, label).to.include({ success: false });
        }
      };
      for (const route of app.routeTable) {
        for (const param of PARAMS) {
          const path = `/api/v1${route.path.replace(/:[A-Za-z0-9_]+/g, (m) => (m === ':id' && route.path.startsWith('/organizations') ? org.organizationId : param))}`;
          const call = () => request(app)[route.method](path).set('X-API-Key', org.ownerKey);
          if (route.method === 'post' || route.method === 'put') {
            for (const body of BODIES) {
              await check(`${route.method.toUpperCase()} ${path} ${JSON.stringify(body)}`, await call().set('Content-Type', 'application/json').send(JSON.stringify(body)));
            }
          } else {
            await check(`${route.method.toUpperCase()} ${path}`, await call());
            if (param === 'x') for (const q of QUERIES) await check(`${route.method.toUpperCase()} ${path}${q}`, await request(app)[route.method](path + q).set('X-API-Key', org.ownerKey));
          }
        }
      }
      expect(failures, failures.join('\n')).to.deep.equal([]);
    });
  });
}
