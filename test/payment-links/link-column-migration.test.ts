import { expect } from 'chai';
import { databaseBefore, type DatabaseBeforeMigration } from '../helpers/migrations';

/**
 * Migration 0018: the payment link an order was made from becomes orders.payment_link_id. Orders
 * checkout made get it; orders that only named the link in their metadata (a plain POST /orders)
 * do not, and what the old triggers counted for them leaves the link's counters.
 */
describe('migration 0018: orders.payment_link_id from checkout orders', function () {
  this.timeout(120_000);
  let db: DatabaseBeforeMigration | null = null;

  after(async () => {
    await db?.remove();
  });

  it('backfills checkout orders only, takes the claims out of the counters, and keys the unit trigger on the column', async () => {
    db = await databaseBefore('0018_order_payment_link', 'linkcolumn');
    const { sql } = db;
    const links = [
      ['pl_a', 'org_a', 'slug-a'],
      ['pl_b', 'org_a', 'slug-b'],
      ['pl_other', 'org_b', 'slug-other'],
    ];
    for (const [id, org, slug] of links) {
      await sql`insert into payment_links (id, organization_id, slug, title, amount, currencies, inventory_total, status)
        values (${id}, ${org}, ${slug}, 'Link', '1', '[]'::jsonb, 10, 'active')`;
    }
    // Under 0011's triggers: each insert naming a link takes a unit; a status change sells or returns it.
    let n = 0;
    const order = async (org: string, reference: string, linkId: string | null, status: 'pending' | 'completed' | 'expired') => {
      n += 1;
      const id = `ord_${String(n).padStart(26, '0')}`;
      await sql`
        insert into orders (id, organization_id, order_reference, pay_token, amount, currency, chain_id, protocol, address, pool_address_id,
          metadata, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at)
        values (${id}, ${org}, ${reference}, ${`tok${n}`}, 1, 'USDT', 'ethereum-local', 'evm', '0xaa', ${n},
          ${JSON.stringify(linkId ? { sku: 'x', paymentLinkId: linkId } : { sku: 'x' })}::jsonb, 10, 5, 3, now(), now())`;
      if (status !== 'pending') await sql`update orders set status = ${status} where id = ${id}`;
      return id;
    };
    const checkoutPending = await order('org_a', 'pl_a/01', 'pl_a', 'pending');
    const checkoutCompleted = await order('org_a', 'pl_a/02', 'pl_a', 'completed');
    const checkoutExpired = await order('org_a', 'pl_a/03', 'pl_a', 'expired');
    const claimPending = await order('org_a', 'mine-1', 'pl_a', 'pending');
    const claimCompleted = await order('org_a', 'mine-2', 'pl_a', 'completed');
    const claimExpired = await order('org_a', 'mine-3', 'pl_b', 'expired');
    const otherLinksPrefix = await order('org_a', 'pl_b/04', 'pl_a', 'pending'); // another link's reference
    const plain = await order('org_a', 'plain', null, 'completed');
    const counters = async () =>
      Object.fromEntries(
        (await sql<{ id: string; r: number; s: number; c: number }[]>`
          select id, inventory_reserved as r, inventory_sold as s, orders_created as c from payment_links order by id`).map((l) => [l.id, [l.r, l.s, l.c]]),
      );
    expect(await counters()).to.deep.equal({ pl_a: [3, 2, 6], pl_b: [0, 0, 1], pl_other: [0, 0, 0] });

    await db.migrateRest();

    const rows = await sql<{ id: string; payment_link_id: string | null }[]>`select id, payment_link_id from orders order by id`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.payment_link_id]))).to.deep.equal({
      [checkoutPending]: 'pl_a',
      [checkoutCompleted]: 'pl_a',
      [checkoutExpired]: 'pl_a',
      [claimPending]: null,
      [claimCompleted]: null,
      [claimExpired]: null,
      [otherLinksPrefix]: null,
      [plain]: null,
    });
    // What checkout made: 3 orders, one open (reserved), one sold.
    expect(await counters()).to.deep.equal({ pl_a: [1, 1, 3], pl_b: [0, 0, 0], pl_other: [0, 0, 0] });

    // Metadata is no authority any more: an insert naming a link there takes nothing.
    await order('org_a', 'mine-4', 'pl_a', 'pending');
    expect((await counters()).pl_a).to.deep.equal([1, 1, 3]);
    // The column takes a unit; a link of another organization is refused; an unknown id breaks the key.
    const insertFrom = (id: string, org: string, linkId: string) => sql`
      insert into orders (id, organization_id, order_reference, pay_token, amount, currency, chain_id, protocol, address, pool_address_id,
        payment_link_id, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at)
      values (${id}, ${org}, ${id}, ${`tok-${id}`}, 1, 'USDT', 'ethereum-local', 'evm', '0xaa', 1, ${linkId}, 10, 5, 3, now(), now())`;
    await insertFrom('ord_new1', 'org_a', 'pl_a');
    expect((await counters()).pl_a).to.deep.equal([2, 1, 4]);
    const refused = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (err) {
        return (err as { code?: string }).code;
      }
      return 'stored';
    };
    expect(await refused(insertFrom('ord_new2', 'org_a', 'pl_other'))).to.equal('SGL03');
    expect(await refused(insertFrom('ord_new3', 'org_a', 'pl_none'))).to.equal('SGL03');
    // A status change no longer moves units in SQL (finishOrder settles them, core/orders/link-units.ts).
    await sql`update orders set status = 'completed' where id = 'ord_new1'`;
    expect((await counters()).pl_a).to.deep.equal([2, 1, 4]);
    expect(await refused(sql`delete from payment_links where id = 'pl_a'`)).to.equal('23503');
    const [fk] = await sql`select convalidated from pg_constraint where conname = 'orders_payment_link_id_payment_links_id_fk'`;
    expect(fk.convalidated).to.equal(true);
  });
});
