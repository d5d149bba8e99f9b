import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createHmac } from 'node:crypto';
import { recomputeOrder } from '../../core/orders/order-state';
import { clientTypesFor, GENERATED_DIR, generatedFileOf } from '../../scripts/client-types';
import { createStablegateClient, verifyWebhook, WebhookVerificationError, type WebhookEvent } from '../../clients/typescript/src';
import { runShop } from '../../clients/typescript/examples/shop';
import { buildTestApp, createTestOrg, knownSecrets, onTearDown, type TestOrg } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { eventually, freePort, startTestWorkers } from '../helpers/webhooks';

describe('typed TypeScript client (clients/typescript)', function () {
  this.timeout(60_000);

  for (const style of ['a', 'b'] as const) {
    it(`the committed path types of style ${style.toUpperCase()} are what openapi-typescript makes of the OpenAPI document now (npm run client:generate)`, async () => {
      const committed = readFileSync(path.join(GENERATED_DIR, generatedFileOf(style)), 'utf8');
      expect(committed === (await clientTypesFor(style)), `clients/typescript/src/generated/${generatedFileOf(style)} is stale: run npm run client:generate`).to.equal(true);
    });
  }

  describe('against the running service', () => {
    const t = buildTestApp({ env: { ...tokenEnv(), WEBHOOK_ALLOW_INSECURE: 'true' } });
    let org: TestOrg;
    let baseUrl = '';
    before(async () => {
      org = await createTestOrg('Client org');
      await seedPoolAddresses(org.organizationId, 'evm', 5);
      const server = http.createServer(t.app);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      onTearDown(async () => {
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      });
    });

    it('the example shop creates an order and receives its order.completed webhook, verified', async () => {
      const { workers } = await startTestWorkers({ WEBHOOK_ALLOW_INSECURE: 'true' });
      const received: WebhookEvent[] = [];
      const shop = await runShop({ baseUrl, apiKey: org.keys.admin, port: await freePort(), onEvent: (e) => received.push(e) });
      try {
        expect(shop.order).to.include({ amount: '10', currency: 'USDT', status: 'pending', paymentState: 'unpaid' });
        // The payment, as the scanner records it, and the order's recompute.
        await insertTestTransfer({
          chainId: CHAIN, currency: 'USDT', amount: 10_000_000n, toAddress: shop.order.address!, orderId: shop.order.orderId, organizationId: org.organizationId,
          counted: true, status: 'confirmed', confirmations: 5, blockTimestamp: new Date(Date.parse(shop.order.createdAt) + 1000),
        });
        await t.deps.db.transaction((tx) => recomputeOrder(tx, t.deps, shop.order.orderId));
        await eventually(() => received.length > 0, 20_000, 'the shop to receive a verified webhook');
        expect(received[0].type).to.equal('order.completed');
        expect(received[0].data).to.include({ orderId: shop.order.orderId, status: 'completed', paymentState: 'paid' });
        // Typed reads: the answer's fields are the document's.
        const got = await shop.sg.GET('/api/v1/orders/{orderId}', { params: { path: { orderId: shop.order.orderId } } });
        expect(got.data?.status).to.equal('completed');
      } finally {
        await shop.close();
        await workers.close();
      }
    });

    it('errors come back typed in the deployment format', async () => {
      const sg = createStablegateClient({ baseUrl, apiKey: org.keys.viewer });
      const missing = await sg.GET('/api/v1/orders/{orderId}', { params: { path: { orderId: 'ord_nope' } } });
      expect(missing.response.status).to.equal(404);
      expect(missing.error).to.include({ code: 'RESOURCE_NOT_FOUND' });
      const chains = await sg.GET('/api/v1/chains');
      expect(chains.data?.data?.map((c) => c.chainId)).to.include(CHAIN);
    });
  });

  describe('verifyWebhook', () => {
    const secret = 'whsec_test_secret_for_the_client';
    knownSecrets.add(secret);
    const body = JSON.stringify({ id: 'evt_1', type: 'order.completed', createdAt: '2026-01-01T00:00:00.000Z', data: { orderId: 'ord_1' } });
    const signature = createHmac('sha256', secret).update(body).digest('hex');

    it('returns the event for the exact bytes signed with the whole secret (whsec_ included), as a string or a Buffer, with or without sha256=', () => {
      expect(verifyWebhook(body, signature, secret).data).to.deep.equal({ orderId: 'ord_1' });
      expect(verifyWebhook(Buffer.from(body), `sha256=${signature.toUpperCase()}`, secret).id).to.equal('evt_1');
    });

    it('refuses a changed body, another secret, the secret without its prefix, and a missing header', () => {
      expect(() => verifyWebhook(body.replace('ord_1', 'ord_2'), signature, secret)).to.throw(WebhookVerificationError, /does not match/);
      expect(() => verifyWebhook(body, signature, `${secret}x`)).to.throw(WebhookVerificationError);
      expect(() => verifyWebhook(body, signature, secret.slice('whsec_'.length))).to.throw(WebhookVerificationError);
      expect(() => verifyWebhook(body, undefined, secret)).to.throw(WebhookVerificationError, /Missing/);
    });
  });
});
