import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import postgres from 'postgres';
import request from 'supertest';
import { knownSecrets, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL } from '../helpers/harness';
import { eventually } from '../helpers/wait';
import { spawnEntry, type Spawned } from '../helpers/processes';

/**
 * The newcomer's path: `npm start` (local chain, tokens, organization and dev pool on first start),
 * create an order with the printed key, `npm run pay`, see the order completed.
 */
describe('newcomer: npm start, create an order, npm run pay, completed (local chain)', function () {
  this.timeout(120_000);
  const dbUrl = TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/$1_newcomer');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sg-newcomer-'));
  let service: Spawned | null = null;

  after(async () => {
    if (service) {
      service.child.kill('SIGTERM');
      await Promise.race([service.exited, new Promise((r) => setTimeout(r, 10_000))]);
      service.child.kill('SIGKILL');
    }
    rmSync(dataDir, { recursive: true, force: true });
    const admin = postgres(TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/postgres'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${new URL(dbUrl).pathname.slice(1)}" with (force)`);
    await admin.end();
  });

  it('takes a payment end to end and keeps the chain across a restart', async () => {
    const env = {
      DATABASE_URL: dbUrl,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}nc`,
      PORT: '0',
      DATA_DIR: dataDir,
      CHAIN_SCAN_INTERVAL_MS: '250',
      CONFIRMATIONS_INTERVAL_MS: '250',
      TRON_LOCAL_BLOCK_TIME_MS: '1000',
      SOLANA_LOCAL_FINALIZATION_LAG: '4',
    };
    service = spawnEntry('scripts/start.ts', env);
    const listening = await service.waitFor(/API listening/, 90_000);
    const base = `http://127.0.0.1:${JSON.parse(listening).port}`;
    // The first-start banner comes once every port is bound (a busy port fails before any key).
    await service.waitFor(/Another key: npm run admin/, 60_000);
    const out = service.stdout();
    expect(out).to.match(/Local chain ethereum-local on http:\/\/127\.0\.0\.1:\d+ \(tokens: /);
    expect(out).to.match(/Local chain tron-local on http:\/\/127\.0\.0\.1:\d+ \(USDT T\w{33}\)/);
    expect(out).to.match(/Local chain solana-local on http:\/\/127\.0\.0\.1:\d+ \(USDC \w{32,44}, USDT \w{32,44}\)/);
    expect(out).to.match(/Added 300 watch-only development EVM, Tron and Solana addresses/);
    expect(out).to.match(/test tokens deployed on the local chain/);
    // How to fill a pool (on this API's port) and how to make another key.
    const port = JSON.parse(listening).port;
    expect(out).to.include(`Fill a pool: POST http://localhost:${port}/api/v1/address-pool/derive {"protocol":"evm","masterPublicKey":"xpub…","count":1000}`);
    expect(out).to.match(/\(or POST \/api\/v1\/address-pool\/import with a CSV of addresses; npm run admin -- create-org "<name>" --derive-from <xpub> does both at once\)/);
    expect(out).to.match(/Another key: npm run admin -- create-key org_\w+ --role admin/);
    const key = /Owner API key \(shown once, store it now\): (pk_[A-Za-z0-9_-]+)/.exec(out)?.[1];
    expect(key, out).to.be.a('string');
    knownSecrets.add(key!);

    const created = await request(base)
      .post('/api/v1/orders')
      .set('X-API-Key', key!)
      .send({ orderReference: 'newcomer-1', amount: '12.5', currency: 'USDT', chainId: 'ethereum-local' });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const orderId: string = created.body.orderId;

    const bad = spawnEntry('scripts/local-chain/pay.ts', { DATABASE_URL: dbUrl }, ['ord_doesnotexist', '1']);
    expect(await bad.exited).to.equal(1);
    expect(bad.stderr()).to.match(/pay failed: order ord_doesnotexist not found/);

    const pay = spawnEntry('scripts/local-chain/pay.ts', { DATABASE_URL: dbUrl }, [orderId, '12.5']);
    expect(await pay.exited, pay.stderr()).to.equal(0);
    expect(pay.stdout()).to.match(new RegExp(`Sent 12\\.5 USDT to ${created.body.address}`));

    // One-second blocks: 3 confirmations in about 3 s, plus the poll intervals.
    let order = created.body;
    await eventually(
      async () => (order = (await request(base).get(`/api/v1/orders/${orderId}`).set('X-API-Key', key!)).body).status === 'completed',
      45_000,
      'the order completed',
      300,
    ).catch(() => {});
    expect(order, service.stdout().slice(-3000)).to.include({ status: 'completed', amountReceived: '12.5' });
    const listed = await request(base).get(`/api/v1/transfers?orderId=${orderId}`).set('X-API-Key', key!);
    expect(listed.body.data).to.have.length(1);
    expect(listed.body.data[0]).to.include({ orderId, amount: '12.5', currency: 'USDT', status: 'confirmed', credited: true });

    // The same on tron-local: a USDT order paid with npm run pay completes once its block is solidified.
    const tronOrder = await request(base)
      .post('/api/v1/orders')
      .set('X-API-Key', key!)
      .send({ orderReference: 'newcomer-tron', amount: '3', currency: 'USDT', chainId: 'tron-local' });
    expect(tronOrder.status, JSON.stringify(tronOrder.body)).to.equal(201);
    expect(tronOrder.body.address).to.match(/^T/);
    const tronPay = spawnEntry('scripts/local-chain/pay.ts', { DATABASE_URL: dbUrl }, [tronOrder.body.orderId, '3']);
    expect(await tronPay.exited, tronPay.stderr()).to.equal(0);
    expect(tronPay.stdout()).to.match(new RegExp(`Sent 3 USDT to ${tronOrder.body.address}`));
    const tronDeadline = Date.now() + 45_000;
    let tron = tronOrder.body;
    while (tron.status !== 'completed' && Date.now() < tronDeadline) {
      await new Promise((r) => setTimeout(r, 300));
      tron = (await request(base).get(`/api/v1/orders/${tronOrder.body.orderId}`).set('X-API-Key', key!)).body;
    }
    expect(tron, service.stdout().slice(-3000)).to.include({ status: 'completed', amountReceived: '3' });
    expect(tron.txHash).to.match(/^[0-9a-f]{64}$/);

    // And on solana-local: a USDC order at a base58 owner address, paid by its id, completes once its slot is finalized.
    const solOrder = await request(base)
      .post('/api/v1/orders')
      .set('X-API-Key', key!)
      .send({ orderReference: 'newcomer-solana', amount: '4.25', currency: 'USDC', chainId: 'solana-local' });
    expect(solOrder.status, JSON.stringify(solOrder.body)).to.equal(201);
    expect(solOrder.body.address).to.match(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    const solPay = spawnEntry('scripts/local-chain/pay.ts', { DATABASE_URL: dbUrl, DATA_DIR: dataDir }, [solOrder.body.orderId, '4.25']);
    expect(await solPay.exited, solPay.stderr()).to.equal(0);
    expect(solPay.stdout()).to.match(new RegExp(`Sent 4\\.25 USDC to ${solOrder.body.address}`));
    let sol = solOrder.body;
    await eventually(
      async () => (sol = (await request(base).get(`/api/v1/orders/${solOrder.body.orderId}`).set('X-API-Key', key!)).body).status === 'completed',
      45_000,
      'the Solana order completed',
      300,
    ).catch(() => {});
    expect(sol, service.stdout().slice(-3000)).to.include({ status: 'completed', amountReceived: '4.25' });
    expect(sol.txHash).to.match(/^[1-9A-HJ-NP-Za-km-z]{80,90}$/);

    // Restart: the chain and its tokens are kept (no redeploy), the order stays completed.
    service.child.kill('SIGTERM');
    expect(await service.exited).to.equal(0);
    service = spawnEntry('scripts/start.ts', env);
    const again = await service.waitFor(/API listening/, 90_000);
    const base2 = `http://127.0.0.1:${JSON.parse(again).port}`;
    expect(service.stdout()).to.not.match(/test tokens deployed/);
    expect(service.stdout()).to.not.match(/pk_/);
    expect(service.stdout().match(/tokens: ([^)]*)\)/)?.[1]).to.equal(out.match(/tokens: ([^)]*)\)/)?.[1]);
    const after = await request(base2).get(`/api/v1/orders/${orderId}`).set('X-API-Key', key!);
    expect(after.body.status).to.equal('completed');
  });
});
