import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import type { ServiceContext } from '../../core/service/context';
import { TRON_LOCAL_CHAIN_ID, TRON_LOCAL_STATE_KEY, applyTronLocalState, type TronLocalState } from '../../core/chains/tron/tron-local-state';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { setServiceState } from '../../core/platform/service-state';
import { events } from '../../db/schema';
import { TronLocalNode } from '../../scripts/local-chain/tron/tron-local-node';
import { buildTestApp, createTestOrg, STYLES, TEST_DATABASE_URL, TEST_REDIS_URL, testDb } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry } from '../helpers/processes';
import { dataOf, listOf } from '../helpers/wire';

const V1 = '/api/v1';
const T_ADDRESS = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;
const TX_ID = /^[0-9a-f]{64}$/;

/**
 * Tron orders and deposit references through the HTTP API in both wire formats, on tron-local
 * (solidified 2 blocks behind its head): T-addresses and the tx id in the answers, deposits
 * pending → confirmed → completed, paid with `npm run pay` as a developer would.
 */
describe('tron over the HTTP API, styles A and B (tron-local)', function () {
  this.timeout(90_000);
  let node: TronLocalNode;
  let dir: string;
  let state: TronLocalState;
  const apps = Object.fromEntries(STYLES.map((style) => [style, buildTestApp({ style })]));

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tron-api-'));
    node = new TronLocalNode({ stateFile: path.join(dir, 'state.json'), blockTimeMs: 0, solidificationLag: 2 });
    await node.start();
    state = { rpcUrl: node.url, genesisHash: node.genesisHash, token: node.token, startedAt: new Date().toISOString(), solidificationLag: 2 };
    for (const { deps } of Object.values(apps)) applyTronLocalState(deps.registry, state);
    await setServiceState(testDb(), TRON_LOCAL_STATE_KEY, state); // what `npm start` records for `npm run pay`
    node.mine(3);
    await settle(apps.a.deps); // the checkpoint starts at the head
  });
  after(async () => {
    await node?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function settle(ctx: ServiceContext) {
    const scan = await runChainScan(ctx, TRON_LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(ctx, TRON_LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  }
  /** `npm run pay -- <target> <amount>` as a child process; the tx id it printed. */
  async function npmRunPay(target: string, amount: string): Promise<string> {
    const pay = spawnEntry('scripts/local-chain/pay.ts', { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL }, [target, amount]);
    expect(await pay.exited, pay.stderr()).to.equal(0);
    const txId = /\btx ([0-9a-f]{64})\b/.exec(pay.stdout())?.[1];
    expect(txId, pay.stdout()).to.match(TX_ID);
    return txId!;
  }

  for (const style of STYLES) {
    describe(`style ${style.toUpperCase()}`, () => {
      const { app, deps } = apps[style];
      let key: string;
      let orgId: string;
      const get = (p: string) => request(app).get(V1 + p).set('X-API-Key', key);
      const post = (p: string, body: object) => request(app).post(V1 + p).set('X-API-Key', key).send(body);

      before(async () => {
        const org = await createTestOrg(`tron api ${style}`);
        key = org.keys.member;
        orgId = org.organizationId;
        await seedPoolAddresses(orgId, 'tron', 5);
      });

      it('an order on tron-local: T-address, pending then completed with the tx id and its block', async () => {
        const created = await post('/orders', { orderReference: `tron-api-${style}-${Date.now()}`, amount: '2.5', currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
        const order = dataOf(style, created);
        expect(order.address).to.match(T_ADDRESS);
        expect(order).to.include({ chainId: TRON_LOCAL_CHAIN_ID, currency: 'USDT', requiredConfirmations: 3, status: 'pending' });
        const orderId = order.orderId ?? order.id;
        const tx = node.submit([{ to: order.address, amount: 2_500_000n }]);
        const [block] = node.mine(1);
        await settle(deps);
        const seen = dataOf(style, await get(`/orders/${orderId}`));
        expect(seen).to.include({ status: 'pending', address: order.address });
        node.mine(2);
        await settle(deps);
        const done = dataOf(style, await get(`/orders/${orderId}`));
        expect(done).to.include({ status: 'completed', address: order.address, amountReceived: '2.5', txHash: tx.id, blockNumber: block.number, confirmations: 3 });
        const listed = listOf(style, await get(`/transfers?orderId=${orderId}`), 'transfers');
        expect(listed.items).to.have.length(1);
        expect(listed.items[0]).to.include({ txHash: tx.id, to: order.address, from: node.faucet, tokenAddress: node.token, amount: '2.5', status: 'confirmed', credited: true });
      });

      it('a deposit reference bound with protocol tron, paid with npm run pay: pending, then confirmed (deposit.confirmed) and completed, with the T-address and tx id', async () => {
        const reference = `tron-api-user-${style}-${Date.now()}`;
        const bound = await post('/deposits/bind', { depositReference: reference, protocol: 'tron' });
        expect(bound.status, JSON.stringify(bound.body)).to.equal(201);
        const binding = dataOf(style, bound);
        expect(binding.address).to.match(T_ADDRESS);
        const txId = await npmRunPay(binding.address, '7.25');
        await settle(deps);
        const pending = listOf(style, await get(`/deposits?depositReference=${reference}`), 'deposits').items;
        expect(pending).to.have.length(1);
        expect(pending[0]).to.include({ status: 'pending', address: binding.address, txHash: txId, amount: '7.25', chainId: TRON_LOCAL_CHAIN_ID, confirmations: 1, requiredConfirmations: 3 });
        node.mine(1);
        await settle(deps);
        expect(dataOf(style, await get(`/deposits/${pending[0].depositId ?? pending[0].id}`))).to.include({ status: 'pending', confirmations: 2 });
        node.mine(1);
        await settle(deps);
        const done = dataOf(style, await get(`/deposits/${pending[0].depositId ?? pending[0].id}`));
        expect(done).to.include({ status: 'completed', address: binding.address, txHash: txId, confirmations: 3 });
        expect(done.confirmedAt).to.be.a('string');
        expect(done.completedAt).to.be.a('string');
        expect(Date.parse(done.confirmedAt)).to.be.at.most(Date.parse(done.completedAt));
        const confirmed = await deps.db.select().from(events).where(and(eq(events.organizationId, orgId), eq(events.type, 'deposit.confirmed'), sql`${events.data}->>'txHash' = ${txId}`));
        expect(confirmed).to.have.length(1);
        expect(confirmed[0].data).to.include({ address: binding.address, txHash: txId, chainId: TRON_LOCAL_CHAIN_ID });
      });
    });
  }
});
