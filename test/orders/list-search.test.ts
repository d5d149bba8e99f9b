import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { encodeBase58, getAddress, hexlify } from 'ethers';
import request from 'supertest';
import { newId } from '../../core/platform/ids';
import { buildTestApp, createTestOrg, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { randomEvmAddress, randomSolanaAddress, randomTronAddress } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { expectError, listOf } from '../helpers/wire';

/**
 * GET /orders?search= and GET /transfers?search=: one box for an order id, a transaction hash of
 * any family, an address of any family, or part of a reference (core/chains/search-term.ts), the
 * operation the dashboard's lists call too.
 */
describe('list search (GET /orders?search=, GET /transfers?search=)', () => {
  let org: TestOrg;
  let other: TestOrg;
  const family = {
    evm: { chainId: 'ethereum-local', currency: 'USDT', address: randomEvmAddress(), txHash: hexlify(randomBytes(32)) },
    tron: { chainId: 'tron-local', currency: 'USDT', address: randomTronAddress(), txHash: hexlify(randomBytes(32)).slice(2) },
    solana: { chainId: 'solana-local', currency: 'USDC', address: randomSolanaAddress(), txHash: encodeBase58(randomBytes(64)) },
  };
  const orderIdsSuffix = hexlify(randomBytes(4)).slice(2);
  const orderIds: Record<string, string> = {};
  const transferIds: Record<string, string> = {};

  async function insertOrder(organizationId: string, reference: string, protocol: keyof typeof family): Promise<string> {
    const id = newId('ord');
    const f = family[protocol];
    await testDb().execute(sql`
      insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol, address,
        pool_address_id, status, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at)
      values (${id}, ${organizationId}, ${reference}, ${hexlify(randomBytes(11)).slice(2)}, 1000000, 0, ${f.currency}, ${f.chainId}, ${protocol},
        ${f.address}, 1, 'pending', 30, 5, 3, now() + interval '30 minutes', now() + interval '35 minutes')`);
    return id;
  }

  before(async () => {
    org = await createTestOrg('Search org');
    other = await createTestOrg('Search other org');
    for (const protocol of ['evm', 'tron', 'solana'] as const) {
      const f = family[protocol];
      orderIds[protocol] = await insertOrder(org.organizationId, `shop-${protocol}-${orderIdsSuffix}`, protocol);
      const transfer = await insertTestTransfer({
        chainId: f.chainId,
        currency: f.currency,
        amount: 1_000_000n,
        protocol,
        toAddress: f.address,
        txHash: f.txHash,
        orderId: orderIds[protocol],
        organizationId: org.organizationId,
      });
      transferIds[protocol] = transfer.id;
    }
    // Another organization's order at the same EVM address and with the same transaction: never shown.
    const foreign = await insertOrder(other.organizationId, `shop-evm-${orderIdsSuffix}`, 'evm');
    await insertTestTransfer({ chainId: family.evm.chainId, currency: 'USDT', amount: 1n, toAddress: family.evm.address, txHash: family.evm.txHash, indexInTx: 1, logIndex: 1, orderId: foreign, organizationId: other.organizationId });
  });

  for (const style of STYLES) {
    describe(`style ${style.toUpperCase()}`, () => {
      const t = buildTestApp({ style });
      const list = (path: string, search: string) => request(t.app).get(`/api/v1${path}`).query({ search }).set('X-API-Key', org.keys.viewer);
      const orderSearch = async (search: string) => {
        const res = await list('/orders', search);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        const { items, pagination } = listOf(style, res, 'orders');
        expect(pagination.total).to.equal(items.length);
        return items.map((o: { orderId: string }) => o.orderId).sort();
      };
      const transferSearch = async (search: string) => {
        const res = await list('/transfers', search);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        return listOf(style, res, 'transfers').items.map((x: { id: string }) => x.id).sort();
      };

      it('finds an order by its id, and another organization\'s id finds nothing', async () => {
        expect(await orderSearch(orderIds.tron)).to.deep.equal([orderIds.tron]);
        expect(await orderSearch(newId('ord'))).to.deep.equal([]);
      });

      it('finds an order by its payment address in each family: EVM in any case, Tron and Solana base58', async () => {
        expect(await orderSearch(family.evm.address.toLowerCase())).to.deep.equal([orderIds.evm]);
        expect(await orderSearch(getAddress(family.evm.address))).to.deep.equal([orderIds.evm]);
        expect(await orderSearch(family.tron.address)).to.deep.equal([orderIds.tron]);
        expect(await orderSearch(family.solana.address)).to.deep.equal([orderIds.solana]);
      });

      it('finds an order by its payment\'s transaction hash in each family (hex with or without 0x, a Solana signature)', async () => {
        expect(await orderSearch(family.evm.txHash)).to.deep.equal([orderIds.evm]);
        expect(await orderSearch(family.evm.txHash.toUpperCase().replace('0X', '0x'))).to.deep.equal([orderIds.evm]);
        expect(await orderSearch(family.tron.txHash)).to.deep.equal([orderIds.tron]);
        expect(await orderSearch(`0x${family.tron.txHash}`)).to.deep.equal([orderIds.tron]);
        expect(await orderSearch(family.solana.txHash)).to.deep.equal([orderIds.solana]);
      });

      it('otherwise searches part of the reference, combined with the other filters', async () => {
        expect(await orderSearch(`SHOP-SOLANA-${orderIdsSuffix}`)).to.deep.equal([orderIds.solana]);
        expect(await orderSearch(orderIdsSuffix)).to.deep.equal(Object.values(orderIds).sort());
        const filtered = await request(t.app).get('/api/v1/orders').query({ search: orderIdsSuffix, chainId: 'tron-local' }).set('X-API-Key', org.keys.viewer);
        expect(listOf(style, filtered, 'orders').items.map((o: { orderId: string }) => o.orderId)).to.deep.equal([orderIds.tron]);
      });

      it('GET /transfers?search= finds transfers by order id, tx hash, receiving address of each family and reference', async () => {
        expect(await transferSearch(orderIds.evm)).to.deep.equal([transferIds.evm]);
        expect(await transferSearch(family.tron.txHash)).to.deep.equal([transferIds.tron]);
        expect(await transferSearch(family.solana.txHash)).to.deep.equal([transferIds.solana]);
        expect(await transferSearch(family.evm.address.toLowerCase())).to.deep.equal([transferIds.evm]);
        expect(await transferSearch(family.solana.address)).to.deep.equal([transferIds.solana]);
        expect(await transferSearch(`shop-tron-${orderIdsSuffix}`)).to.deep.equal([transferIds.tron]);
      });

      it('bad input is a clear 400 VALIDATION_ERROR on both lists: a miscapitalised EVM address, a Tron address with a broken checksum, empty, too long', async () => {
        // EIP-55's own example with its last letter's case flipped; a Tron address with its last character changed.
        const miscased = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD';
        const tron = family.tron.address;
        const brokenTron = `${tron.slice(0, 33)}${tron[33] === '2' ? '3' : '2'}`;
        for (const path of ['/orders', '/transfers']) {
          for (const [search, says] of [
            [miscased, 'evm address'],
            [brokenTron, 'tron address'],
            ['', 'search'],
            ['x'.repeat(256), 'search'],
          ] as const) {
            const res = await list(path, search);
            expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
            expect(res.body.message.toLowerCase(), `${path} ${search}`).to.include(says);
          }
        }
      });
    });
  }
});
