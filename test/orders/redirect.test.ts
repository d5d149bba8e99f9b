import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import { ManualClock } from '../../core/platform/clock';
import { createOrder } from '../../core/orders/orders';
import { recomputeOrder } from '../../core/orders/order-state';
import { buildOrderRedirect, orderRedirectUrl } from '../../core/orders/redirect';
import type { OrderView } from '../../core/views/order';
import { setConfigValue } from '../../core/organizations/org-config';
import { orders } from '../../db/schema';
import { createTestOrg, testConfig, testContext, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { CHAIN, checkpointAt, tokenEnv } from '../helpers/orders';

const TX = `0x${'ab'.repeat(32)}`;
function view(overrides: Partial<OrderView> = {}): OrderView {
  return {
    orderId: 'ord_1', orderReference: 'inv 42&x', amount: '10.5', amountReceived: '10.5', amountDue: '0', amountExcess: '0', amountRefunded: '0', paymentState: 'paid', currency: 'USDT', chainId: CHAIN,
    protocol: 'evm', address: '0x0000000000000000000000000000000000000001', paymentAddress: '0x0000000000000000000000000000000000000001', paymentUrl: 'http://localhost/pay/ord_1',
    status: 'completed', metadata: {}, successUrl: 'https://shop.example/thanks?session=s1', cancelUrl: 'https://shop.example/cancel',
    requiredConfirmations: 3, expiresAt: '', graceEndsAt: '', createdAt: '', txHash: TX,
    routes: null, route: null, chosenRoutes: null,
    exceptions: [], resolution: 'automatic', resolvedBy: null, resolvedAt: null, resolutionReason: null, lateWindowEndsAt: null, unattributedPayments: [], ...overrides,
  };
}
const params = (url: string | null) => Object.fromEntries(new URL(url!).searchParams);

describe('order redirect URLs (pure)', () => {
  const none = { successUrl: null, cancelUrl: null };

  it('completed: successUrl with orderReference, status, amount, currency, chainId and txHash, keeping its own parameters', () => {
    const url = orderRedirectUrl(view(), none)!;
    expect(url.startsWith('https://shop.example/thanks?')).to.equal(true);
    expect(params(url)).to.deep.equal({ session: 's1', orderReference: 'inv 42&x', status: 'completed', amount: '10.5', currency: 'USDT', chainId: CHAIN, txHash: TX });
  });

  it('expired: cancelUrl with the same parameters minus txHash', () => {
    const url = orderRedirectUrl(view({ status: 'expired', txHash: undefined }), none)!;
    expect(url.startsWith('https://shop.example/cancel?')).to.equal(true);
    expect(params(url)).to.deep.equal({ orderReference: 'inv 42&x', status: 'expired', amount: '10.5', currency: 'USDT', chainId: CHAIN });
  });

  it('falls back to the organization defaults, and is null when no URL applies or the order is pending', () => {
    const defaults = { successUrl: 'https://d.example/ok', cancelUrl: 'https://d.example/ko' };
    expect(orderRedirectUrl(view({ successUrl: null }), defaults)!.startsWith('https://d.example/ok?')).to.equal(true);
    expect(orderRedirectUrl(view({ status: 'expired', cancelUrl: null }), defaults)!.startsWith('https://d.example/ko?')).to.equal(true);
    // The order's own URL wins over the default.
    expect(orderRedirectUrl(view(), defaults)!.startsWith('https://shop.example/thanks?')).to.equal(true);
    expect(orderRedirectUrl(view({ successUrl: null }), none)).to.equal(null);
    expect(orderRedirectUrl(view({ status: 'expired', cancelUrl: null }), none)).to.equal(null);
    expect(orderRedirectUrl(view({ status: 'pending' }), defaults)).to.equal(null);
  });
});

describe('order redirect URLs (organization defaults from configuration)', () => {
  const clock = new ManualClock();
  const ctx = testContext(testConfig(tokenEnv()), clock);
  let org: TestOrg;
  before(async () => {
    org = await createTestOrg('redirect org');
    await seedPoolAddresses(org.organizationId, 'evm', 5);
    await setConfigValue(testDb(), org.organizationId, 'default_order_success_url', 'https://org.example/done');
    await setConfigValue(testDb(), org.organizationId, 'default_order_cancel_url', 'https://org.example/expired');
  });
  const load = async (id: string) => (await testDb().select().from(orders).where(eq(orders.id, id)))[0];

  it('uses the defaults for a completed and an expired order without URLs; null while pending', async () => {
    const paid = await createOrder(ctx, org.organizationId, { orderReference: 'r-paid', amount: '1', currency: 'USDC', chainId: CHAIN });
    expect(await buildOrderRedirect(ctx, paid)).to.equal(null);
    const trf = await insertTestTransfer({
      chainId: CHAIN, currency: 'USDC', amount: 1_000_000n, toAddress: paid.address, orderId: paid.id, organizationId: org.organizationId,
      counted: true, status: 'confirmed', confirmations: 3, blockTimestamp: new Date(paid.createdAt.getTime() + 1000),
    });
    await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, paid.id));
    const done = await buildOrderRedirect(ctx, await load(paid.id));
    expect(done!.startsWith('https://org.example/done?')).to.equal(true);
    expect(params(done)).to.deep.include({ status: 'completed', txHash: trf.txHash, amount: '1', currency: 'USDC', orderReference: 'r-paid' });

    const late = await createOrder(ctx, org.organizationId, { orderReference: 'r-late', amount: '1', currency: 'USDC', chainId: CHAIN, paymentWindowMinutes: 1, graceMinutes: 0 });
    await checkpointAt(new Date(late.graceEndsAt.getTime() + 1000));
    clock.advance(61_000);
    try {
      await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, late.id));
    } finally {
      clock.advance(-61_000);
    }
    const gone = await buildOrderRedirect(ctx, await load(late.id));
    expect(gone!.startsWith('https://org.example/expired?')).to.equal(true);
    expect(params(gone)).to.not.have.property('txHash');
    expect(params(gone).status).to.equal('expired');
  });
});
