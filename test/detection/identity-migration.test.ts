import { expect } from 'chai';
import { databaseBefore, type DatabaseBeforeMigration } from '../helpers/migrations';

/**
 * Migration 0004 re-keys transfers from (chain, tx hash, block log index) to (chain, tx hash,
 * index within the transaction), backfilling the index of rows stored before it.
 */
describe('migration 0004: transfer identity (chain, tx hash, index within the transaction)', function () {
  this.timeout(60_000);
  let db: DatabaseBeforeMigration | null = null;

  after(async () => {
    await db?.remove();
  });

  it('backfills index_in_tx by block log index within each transaction, and the live unique key is the new identity', async () => {
    db = await databaseBefore('0004_detection_core_identity_and_skew', 'identity');
    const { sql } = db;
    const txA = `0x${'a'.repeat(64)}`;
    const txB = `0x${'b'.repeat(64)}`;
    const block1 = `0x${'1'.repeat(64)}`;
    const block2 = `0x${'2'.repeat(64)}`;
    const orphan = `0x${'9'.repeat(64)}`;
    const insert = (id: string, txHash: string, logIndex: number, blockHash: string, status = 'confirmed', indexInTx?: number) => sql`
      insert into transfers (id, chain_id, protocol, currency, token_address, amount, from_address, to_address, tx_hash, log_index,
        block_number, block_hash, block_timestamp, status ${indexInTx === undefined ? sql`` : sql`, index_in_tx`})
      values (${id}, 'ethereum-local', 'evm', 'USDT', '0x00000000000000000000000000000000000000aa', 1, '0x00000000000000000000000000000000000000bb',
        '0x00000000000000000000000000000000000000cc', ${txHash}, ${logIndex}, 10, ${blockHash}, now(), ${status} ${indexInTx === undefined ? sql`` : sql`, ${indexInTx}`})`;
    // Transaction A pays two watched addresses (block log indexes 7 and 3, inserted out of order);
    // transaction B one, and an orphaned (dropped) copy of B from a reorged block.
    await insert('trf_a7', txA, 7, block1);
    await insert('trf_a3', txA, 3, block1);
    await insert('trf_b5', txB, 5, block2);
    await insert('trf_b5_orphan', txB, 2, orphan, 'dropped');

    await db.migrateRest();
    const rows = await sql<{ id: string; log_index: number; index_in_tx: number }[]>`select id, log_index, index_in_tx from transfers order by id`;
    expect(Object.fromEntries(rows.map((r) => [r.id, [r.log_index, r.index_in_tx]]))).to.deep.equal({
      trf_a3: [3, 0],
      trf_a7: [7, 1],
      trf_b5: [5, 0],
      trf_b5_orphan: [2, 0], // its own block: numbered on its own, and dropped rows are outside the key
    });
    const [column] = await sql`select is_nullable from information_schema.columns where table_name = 'transfers' and column_name = 'index_in_tx'`;
    expect(column.is_nullable).to.equal('NO');

    const indexes = await sql<{ indexname: string; indexdef: string }[]>`select indexname, indexdef from pg_indexes where tablename = 'transfers'`;
    const names = indexes.map((i) => i.indexname);
    expect(names).to.include('transfers_chain_tx_index_live_uq');
    expect(names).not.to.include('transfers_chain_tx_log_live_uq');
    const key = indexes.find((i) => i.indexname === 'transfers_chain_tx_index_live_uq')!.indexdef;
    expect(key).to.match(/UNIQUE INDEX .*\(chain_id, tx_hash, index_in_tx\) WHERE \(status <> 'dropped'::text\)/);

    // The same (chain, tx, index) live twice is refused, whatever the block log index (a re-mined
    // transaction at another position is the same transfer); a dropped copy and the next index are not.
    const violation = await insert('trf_a3_remined', txA, 12, orphan, 'pending', 0).then(
      () => null,
      (err: { code?: string }) => err.code,
    );
    expect(violation).to.equal('23505');
    await insert('trf_a3_dropped', txA, 12, orphan, 'dropped', 0);
    await insert('trf_a_third', txA, 9, block1, 'pending', 2);
    // The old key is gone: the same block log index in another position of the transaction is allowed.
    await insert('trf_b_second', txB, 5, orphan, 'pending', 1);
  });
});
