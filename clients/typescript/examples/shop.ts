// A 30-line shop: registers its webhook endpoint, creates an order, and handles the order's
// webhooks with a verified signature. Run: STABLEGATE_API_KEY=pk_… npx tsx clients/typescript/examples/shop.ts
import http from 'node:http';
import { createStablegateClient, verifyWebhook, type WebhookEvent } from '../src';

export async function runShop(o: { baseUrl: string; apiKey: string; port: number; onEvent?: (e: WebhookEvent) => void }) {
  const sg = createStablegateClient({ baseUrl: o.baseUrl, apiKey: o.apiKey });
  const hook = await sg.POST('/api/v1/webhooks/endpoints', { body: { url: `http://127.0.0.1:${o.port}/webhooks`, events: ['order.completed', 'order.expired'] } });
  if (!hook.data) throw new Error(`webhook endpoint: ${hook.error?.message}`);
  const secret = hook.data.secret; // shown once: a real shop stores it
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      try {
        const event = verifyWebhook(Buffer.concat(chunks), req.headers['x-service-signature'], secret);
        console.log(`webhook ${event.type}: order ${String(event.data.orderReference)} is ${String(event.data.status)}`);
        o.onEvent?.(event);
        res.writeHead(200).end('ok'); // answer fast; do slow work afterwards
      } catch (err) {
        res.writeHead(400).end((err as Error).message);
      }
    });
  });
  await new Promise<void>((r) => server.listen(o.port, '127.0.0.1', r));
  const order = await sg.POST('/api/v1/orders', { body: { orderReference: `shop-${Date.now()}`, amount: '10.00', currency: 'USDT', chainId: 'ethereum-local' } });
  if (!order.data) throw new Error(`order: ${order.error?.message}`);
  console.log(`Pay ${order.data.amount} ${order.data.currency} at ${order.data.paymentUrl}`);
  return { order: order.data, endpointId: hook.data.id, sg, close: () => new Promise<void>((r) => server.close(() => r())) };
}

if (require.main === module) {
  runShop({ baseUrl: process.env.STABLEGATE_URL ?? 'http://localhost:3000', apiKey: process.env.STABLEGATE_API_KEY ?? '', port: Number(process.env.SHOP_PORT ?? 4000) }).catch((e) => (console.error(e), process.exit(1)));
}
