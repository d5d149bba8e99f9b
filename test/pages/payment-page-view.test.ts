import { expect } from 'chai';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { transferCountsTowardOrder, type TransferFacts } from '../../core/orders/order-state';
import type { OrderRow } from '../../core/views/order';
import type { PaymentPageFacts } from '../../core/orders/payment-page';
import { presentPaymentPage } from '../../core/orders/payment-page-view';
import { testConfig, testDb } from '../helpers/harness';
import { checkSolanaAddress } from '../../core/chains/solana/solana-address';

/** The page's view of orders the local chain cannot produce: Tron (solidification, a tron: request in the QR). */
describe('payment page view of a Tron order', () => {
  const ctx = { db: testDb(), registry: ChainRegistry.forNetwork('testnet', SCANNED_FAMILIES), config: testConfig() };
  const created = new Date('2026-01-01T10:00:00Z');
  const order = {
    id: 'ord_tron', organizationId: 'org_t', orderReference: 'tron-1', payToken: 'A'.repeat(22), amount: 5_000_000n, amountReceived: 0n,
    currency: 'USDT', chainId: 'tron-nile', protocol: 'tron', address: 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', poolAddressId: 1,
    status: 'pending', successUrl: null, cancelUrl: null, metadata: {}, paymentWindowMinutes: 10, graceMinutes: 5, requiredConfirmations: 3,
    expiresAt: new Date(created.getTime() + 600_000), graceEndsAt: new Date(created.getTime() + 900_000), txHash: null, blockNumber: null,
    confirmations: null, completedAt: null, expiredAt: null, createdAt: created, updatedAt: created,
  } as OrderRow;
  /** A transfer to the order as recorded: `counted` stored by the order's rule. */
  const transfer = (amount: bigint, overrides: Partial<TransferFacts> = {}): TransferFacts => {
    const recorded = {
      id: 'trf_1', chainId: 'tron-nile', currency: 'USDT', amount, status: 'pending' as const, confirmations: 1, txHash: 'ab'.repeat(32), logIndex: 0,
      blockNumber: 10, blockTimestamp: new Date(created.getTime() + 60_000), ...overrides,
    };
    return { ...recorded, counted: transferCountsTowardOrder(order, recorded) };
  };
  const facts = (transfers: TransferFacts[]): PaymentPageFacts => ({ order, organizationName: 'Tron shop', supportContact: null, transfers });
  const now = new Date(created.getTime() + 120_000);

  const nileUsdt = ctx.registry.get('tron-nile')!.tokens.USDT!.address!;
  it('invites payment with a tron: request for the exact amount in the token as the QR content, the address shown beside it', async () => {
    const view = await presentPaymentPage(ctx, facts([]), now);
    expect(view).to.include({ state: 'awaiting', address: order.address, walletUri: `tron:${order.address}?token=${nileUsdt}&amount=5`, chainName: 'Tron Nile', finality: 'solidified' });
  });

  it('a full payment waits for solidification; a partial one asks for the remainder', async () => {
    const seen = await presentPaymentPage(ctx, facts([transfer(5_000_000n)]), now);
    expect(seen).to.include({ state: 'confirming', finality: 'solidified', walletUri: null, amountReceived: '5' });
    const partial = await presentPaymentPage(ctx, facts([transfer(2_000_000n)]), now);
    expect(partial).to.include({ state: 'underpaid', remaining: '3', walletUri: `tron:${order.address}?token=${nileUsdt}&amount=3` });
  });

  it("a transfer in another token or on another chain is not this order's: the page says nothing about it", async () => {
    const other = [transfer(5_000_000n, { currency: 'USDC' }), transfer(5_000_000n, { chainId: 'tron-mainnet' })];
    const view = await presentPaymentPage(ctx, facts(other), now);
    expect(view).to.include({ state: 'awaiting', amountReceived: '0' });
  });
});

/** A Solana order's page: a Solana Pay transfer request with the order's own reference. */
describe('payment page view of a Solana order', () => {
  const ctx = { db: testDb(), registry: ChainRegistry.forNetwork('mainnet', SCANNED_FAMILIES), config: testConfig() };
  const created = new Date('2026-01-01T10:00:00Z');
  const owner = '9ou4qq7RhycWHGS8XkgQwUS1qyWHrbz7ZoCKdm9o23vy';
  const orderOf = (id: string) =>
    ({
      id, organizationId: 'org_s', orderReference: 'sol & co/1', payToken: 'B'.repeat(22), amount: 12_500_000n, amountReceived: 0n,
      currency: 'USDC', chainId: 'solana-mainnet', protocol: 'solana', address: owner, poolAddressId: 1,
      status: 'pending', successUrl: null, cancelUrl: null, metadata: {}, paymentWindowMinutes: 10, graceMinutes: 5, requiredConfirmations: 32,
      expiresAt: new Date(created.getTime() + 600_000), graceEndsAt: new Date(created.getTime() + 900_000), txHash: null, blockNumber: null,
      confirmations: null, completedAt: null, expiredAt: null, createdAt: created, updatedAt: created,
    }) as OrderRow;
  const now = new Date(created.getTime() + 120_000);

  it('QR and wallet button: solana:<owner>?amount=<decimal>&spl-token=<mint>&reference=<key>&label&message, a fresh reference per order, stable across views', async () => {
    const view = await presentPaymentPage(ctx, { order: orderOf('ord_sol_1'), organizationName: 'Sol shop', supportContact: null, transfers: [] }, now);
    const uri = new URL(view.walletUri!);
    expect(uri.protocol).to.equal('solana:');
    expect(uri.pathname).to.equal(owner);
    expect(Object.fromEntries(uri.searchParams)).to.deep.include({ amount: '12.5', 'spl-token': 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', label: 'Sol shop', message: 'Order sol & co/1' });
    expect(view.walletUri).to.not.contain('+');
    const reference = uri.searchParams.get('reference')!;
    expect(checkSolanaAddress(reference).ok).to.equal(true);
    const again = await presentPaymentPage(ctx, { order: orderOf('ord_sol_1'), organizationName: 'Sol shop', supportContact: null, transfers: [] }, now);
    expect(again.walletUri).to.equal(view.walletUri);
    const other = await presentPaymentPage(ctx, { order: orderOf('ord_sol_2'), organizationName: 'Sol shop', supportContact: null, transfers: [] }, now);
    expect(new URL(other.walletUri!).searchParams.get('reference')).to.not.equal(reference);
  });
});
