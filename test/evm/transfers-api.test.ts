import { expect } from 'chai';
import request from 'supertest';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { buildTestApp, createTestOrg, type TestOrg } from '../helpers/harness';
import { insertTestTransfer } from '../helpers/transfers';
import { randomEvmAddress, randomTronAddress } from '../helpers/pool';

describe('GET /transfers and /transfers/:id', () => {
  const apps = { a: buildTestApp({ style: 'a' }), b: buildTestApp({ style: 'b' }) };
  let orgA: TestOrg;
  let orgB: TestOrg;
  const addrA = randomEvmAddress();
  const ids: Record<string, string> = {};

  before(async () => {
    orgA = await createTestOrg('transfers A');
    orgB = await createTestOrg('transfers B');
    const base = { chainId: LOCAL_CHAIN_ID, organizationId: orgA.organizationId };
    ids.usdt = (await insertTestTransfer({ ...base, currency: 'USDT', amount: 12_500_000n, toAddress: addrA, blockNumber: 10, status: 'confirmed', confirmations: 5 })).id;
    ids.dai = (await insertTestTransfer({ ...base, currency: 'DAI', amount: 10n ** 18n + 1n, toAddress: addrA, blockNumber: 12 })).id;
    ids.dropped = (await insertTestTransfer({ ...base, currency: 'USDC', amount: 1n, toAddress: randomEvmAddress(), blockNumber: 11, status: 'dropped' })).id;
    ids.other = (await insertTestTransfer({ chainId: LOCAL_CHAIN_ID, organizationId: orgB.organizationId, currency: 'USDT', amount: 5n, toAddress: randomEvmAddress() })).id;
  });

  it('lists only the caller organization’s transfers, B shape, viewer allowed, with the design.md §4 record', async () => {
    const res = await request(apps.b.app).get('/api/v1/transfers').set('X-API-Key', orgA.keys.viewer);
    expect(res.status).to.equal(200);
    expect(res.body.pagination).to.include({ page: 1, limit: 20, total: 3, hasMore: false });
    expect(res.body.data.map((t: { id: string }) => t.id).sort()).to.deep.equal([ids.usdt, ids.dai, ids.dropped].sort());
    const dai = res.body.data.find((t: { id: string }) => t.id === ids.dai);
    expect(dai).to.include({ amount: '1.000000000000000001', currency: 'DAI', chainId: LOCAL_CHAIN_ID, status: 'pending', attribution: null, orderId: null, depositReference: null, counted: false, credited: false, to: addrA });
    for (const field of ['txHash', 'logIndex', 'blockNumber', 'blockHash', 'blockTimestamp', 'confirmations', 'from', 'detectedAt', 'confirmedAt', 'tokenAddress', 'protocol']) {
      expect(dai).to.have.property(field);
    }
  });

  it('A shape: data.transfers and data.pagination', async () => {
    const res = await request(apps.a.app).get('/api/v1/transfers?limit=2&sortBy=blockNumber&sortOrder=asc').set('X-API-Key', orgA.keys.viewer);
    expect(res.status).to.equal(200);
    expect(res.body.success).to.equal(true);
    expect(res.body.data.transfers.map((t: { id: string }) => t.id)).to.deep.equal([ids.usdt, ids.dropped]);
    expect(res.body.data.pagination).to.include({ page: 1, limit: 2, total: 3, totalPages: 2 });
  });

  it('filters by status, currency, chainId, txHash and address', async () => {
    const q = async (qs: string) => (await request(apps.b.app).get(`/api/v1/transfers?${qs}`).set('X-API-Key', orgA.keys.viewer)).body.data.map((t: { id: string }) => t.id).sort();
    expect(await q('status=dropped')).to.deep.equal([ids.dropped]);
    expect(await q('currency=USDT')).to.deep.equal([ids.usdt]);
    expect(await q(`address=${addrA.toLowerCase()}`)).to.deep.equal([ids.usdt, ids.dai].sort());
    expect(await q('chainId=ethereum-sepolia')).to.deep.equal([]);
    const one = (await request(apps.b.app).get(`/api/v1/transfers/${ids.usdt}`).set('X-API-Key', orgA.keys.viewer)).body;
    expect(await q(`txHash=${one.txHash.toUpperCase().replace('0X', '0x')}`)).to.deep.equal([ids.usdt]);
  });

  it('address filter normalises per family: an EVM address in any case, a Tron address only in its exact case', async () => {
    const org = await createTestOrg('transfers address forms');
    const tron = randomTronAddress();
    const evm = randomEvmAddress();
    const tronId = (await insertTestTransfer({ chainId: 'tron-local', protocol: 'tron', organizationId: org.organizationId, currency: 'USDT', amount: 1n, toAddress: tron, tokenAddress: randomTronAddress() })).id;
    const evmId = (await insertTestTransfer({ chainId: LOCAL_CHAIN_ID, organizationId: org.organizationId, currency: 'USDT', amount: 2n, toAddress: evm })).id;
    const q = async (address: string) => {
      const res = await request(apps.b.app).get('/api/v1/transfers').query({ address }).set('X-API-Key', org.keys.viewer);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return res.body.data.map((t: { id: string }) => t.id);
    };
    expect(await q(tron)).to.deep.equal([tronId]);
    // Base58 is case-sensitive: another case is another (here invalid) address, never this one.
    const swapped = [...tron].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');
    expect(swapped).not.to.equal(tron);
    expect(await q(swapped)).to.deep.equal([]);
    expect(await q(tron.slice(0, 10) + tron.slice(10).toLowerCase())).to.deep.equal([]);
    expect(await q(evm.toLowerCase())).to.deep.equal([evmId]);
    expect(await q(evm)).to.deep.equal([evmId]);
    expect(await q('not-an-address')).to.deep.equal([]);
  });

  it('GET /transfers/:id: 200 for the owner, 404 for another organization', async () => {
    const own = await request(apps.b.app).get(`/api/v1/transfers/${ids.usdt}`).set('X-API-Key', orgA.keys.viewer);
    expect(own.status).to.equal(200);
    expect(own.body).to.include({ id: ids.usdt, amount: '12.5', status: 'confirmed', confirmations: 5 });
    const foreign = await request(apps.b.app).get(`/api/v1/transfers/${ids.other}`).set('X-API-Key', orgA.keys.owner);
    expect(foreign.status).to.equal(404);
    expect(foreign.body.code).to.equal('RESOURCE_NOT_FOUND');
    const listB = await request(apps.b.app).get('/api/v1/transfers').set('X-API-Key', orgB.keys.viewer);
    expect(listB.body.data.map((t: { id: string }) => t.id)).to.deep.equal([ids.other]);
  });

  it('an unattributed transfer recorded without a stored count (before migration 0010) shows the count the confirmations job confirms it at', async () => {
    const chain = apps.b.deps.registry.get(LOCAL_CHAIN_ID)!;
    const res = await request(apps.b.app).get(`/api/v1/transfers/${ids.dai}`).set('X-API-Key', orgA.keys.viewer);
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ id: ids.dai, attribution: null, requiredConfirmations: chain.orderConfirmations });
    const stored = await insertTestTransfer({ chainId: LOCAL_CHAIN_ID, organizationId: orgA.organizationId, currency: 'USDT', amount: 3n, toAddress: addrA, requiredConfirmations: chain.orderConfirmations + 4 });
    const shown = await request(apps.b.app).get(`/api/v1/transfers/${stored.id}`).set('X-API-Key', orgA.keys.viewer);
    expect(shown.body.requiredConfirmations).to.equal(chain.orderConfirmations + 4);
  });

  it('rejects an unknown sortBy or status with 400', async () => {
    const res = await request(apps.b.app).get('/api/v1/transfers?sortBy=fromAddress').set('X-API-Key', orgA.keys.viewer);
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('VALIDATION_ERROR');
    expect((await request(apps.b.app).get('/api/v1/transfers?status=lost').set('X-API-Key', orgA.keys.viewer)).status).to.equal(400);
  });

  it('status=reorged filters (both styles), and reorged is in the OpenAPI enums of the filter and the transfer', async () => {
    const org = await createTestOrg('transfers reorged');
    const base = { chainId: LOCAL_CHAIN_ID, organizationId: org.organizationId, currency: 'USDT', amount: 1_000_000n, toAddress: randomEvmAddress() };
    const reorged = (await insertTestTransfer({ ...base, status: 'reorged', confirmations: 5, credited: true })).id;
    await insertTestTransfer({ ...base, status: 'confirmed', confirmations: 5 });
    await insertTestTransfer({ ...base, status: 'dropped' });
    const b = await request(apps.b.app).get('/api/v1/transfers?status=reorged').set('X-API-Key', org.keys.viewer);
    expect(b.status, JSON.stringify(b.body)).to.equal(200);
    expect(b.body.data.map((t: { id: string; status: string; credited: boolean }) => [t.id, t.status, t.credited])).to.deep.equal([[reorged, 'reorged', true]]);
    const a = await request(apps.a.app).get('/api/v1/transfers?status=reorged').set('X-API-Key', org.keys.viewer);
    expect(a.status, JSON.stringify(a.body)).to.equal(200);
    expect(a.body.data.transfers.map((t: { id: string; status: string }) => [t.id, t.status])).to.deep.equal([[reorged, 'reorged']]);
    const one = await request(apps.a.app).get(`/api/v1/transfers/${reorged}`).set('X-API-Key', org.keys.viewer);
    expect(one.body.data).to.include({ id: reorged, status: 'reorged' });

    for (const style of ['a', 'b'] as const) {
      const doc = (await request(apps[style].app).get('/api/v1/openapi.json')).body;
      const list = doc.paths['/api/v1/transfers'].get;
      expect(list.parameters.find((p: { name: string }) => p.name === 'status').schema.enum, `style ${style} filter`).to.include('reorged');
      const body = list.responses['200'].content['application/json'].schema;
      const items = style === 'a' ? body.properties.data.properties.transfers.items : body.properties.data.items;
      expect(items.properties.status.enum, `style ${style} transfer`).to.deep.equal(['pending', 'confirmed', 'dropped', 'reorged']);
    }
  });

  it('is documented in the OpenAPI document', async () => {
    const res = await request(apps.b.app).get('/api/v1/openapi.json');
    expect(res.body.paths).to.have.property('/api/v1/transfers');
    expect(res.body.paths['/api/v1/transfers/{id}']).to.have.property('get');
  });
});
