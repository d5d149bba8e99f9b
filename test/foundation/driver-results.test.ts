import { expect } from 'chai';
import { createDb, isDatabaseUnreachable, type DbHandle } from '../../db/client';
import { TEST_DATABASE_URL } from '../helpers/harness';
import { startTcpProxy, type CutKind, type TcpProxy } from '../helpers/processes';

/**
 * postgres.js 3.4.9 kept a connection's row counter across queries when one ended while streaming
 * its rows (porsager/postgres#1119, #1181; patched in patches/postgres+3.4.9.patch): the next query
 * on that connection resolved with a sparse array, its first rows missing, so `const [row] = …`
 * read undefined. Found by the soak as a valid API key answered 401 (its lookup read no row) and a
 * 503 NO_AVAILABLE_ADDRESSES with addresses free (the creation read no row back). And a query sent
 * between a reset socket's 'error' and its 'close' was never settled, and then took the next
 * connection's first answer (patched too). Each case here ends a query mid-stream on a
 * one-connection pool of our own client, then asks again.
 */
describe('query results after a query ended while streaming rows (our postgres.js client, one connection)', function () {
  this.timeout(60_000);
  const handles: DbHandle[] = [];
  const client = (url: string, answerWithinMs?: number) => {
    const handle = createDb(url, { max: 1, answerWithinMs });
    handles.push(handle);
    return handle.sql;
  };
  after(async () => {
    await Promise.all(handles.map((h) => h.close().catch(() => {})));
  });

  const expectExactly = (rows: readonly unknown[], expected: unknown[]) => {
    expect(rows.length, 'row count').to.equal(expected.length);
    expect([...rows]).to.deep.equal(expected);
  };

  it('an error on a row (after others were sent) leaves the next, pipelined query its own rows', async () => {
    const sql = client(TEST_DATABASE_URL);
    const failing = sql.unsafe('select i, 1 / (4 - i) as boom from generate_series(1, 10) i', [], { prepare: true }).then(
      () => null,
      (err: Error) => err,
    );
    const next = sql.unsafe('select x from generate_series(1, 2) x', [], { prepare: true });
    expect((await failing)?.message).to.match(/division by zero/);
    expectExactly(await next, [{ x: 1 }, { x: 2 }]);
  });

  it("the session's statement_timeout (the deadline's, below the bound) striking mid-stream leaves the next query its own rows", async () => {
    // A bound of 1 s: statements are cancelled server-side after 900 ms.
    const sql = client(TEST_DATABASE_URL, 1000);
    const slowOnRow4 = sql
      .unsafe('select i, pg_sleep(case when i = 4 then 5 else 0 end) from generate_series(1, 6) i', [], { prepare: true })
      .then(
        () => null,
        (err: Error & { code?: string }) => err,
      );
    const next = sql.unsafe('select x from generate_series(1, 3) x', [], { prepare: true });
    expect((await slowOnRow4)?.code).to.equal('57014');
    expectExactly(await next, [{ x: 1 }, { x: 2 }, { x: 3 }]);
  });

  for (const kind of ['rst', 'fin'] as CutKind[]) {
    it(`a connection cut (${kind.toUpperCase()}) after some of a result's rows arrived leaves the next connection's query its own rows`, async () => {
      const target = new URL(TEST_DATABASE_URL);
      const proxy: TcpProxy = await startTcpProxy(Number(target.port || 5432));
      try {
        const url = new URL(TEST_DATABASE_URL);
        url.host = new URL(proxy.url).host;
        // The marker names the long query: its answer is cut at its second chunk that holds rows
        // (the padding is only in its DataRows), so the driver has counted the first chunk's rows
        // and never sees the end of the result.
        const MARKER = Buffer.from('stream_me_then_cut');
        const PADDING = Buffer.from('x'.repeat(200));
        let cuts = 0;
        proxy.tap(() => {
          let armed = false;
          let rowChunks = 0;
          return {
            fromClient(chunk) {
              if (cuts === 0 && chunk.includes(MARKER)) armed = true;
              return null;
            },
            fromServer(chunk) {
              if (!armed || cuts > 0 || !chunk.includes(PADDING)) return null;
              if (++rowChunks < 2) return null;
              cuts += 1;
              return kind;
            },
          };
        });
        const sql = client(url.toString());
        expectExactly(await sql.unsafe('select 1 as warm', [], { prepare: true }), [{ warm: 1 }]);
        const cutQuery = await sql
          .unsafe(`select i, repeat('x', 200) as pad, 'stream_me_then_cut' as marker from generate_series(1, 50000) i`, [], { prepare: true })
          .then(
            (rows) => rows.length,
            (err: Error) => err,
          );
        expect(cuts, 'the long result was cut').to.equal(1);
        expect(cutQuery).to.be.an('error');
        // Asked at once, as a retry would be: after an RST the socket's 'error' (which failed the
        // cut query) comes before its 'close', so this may still be sent on the dying connection;
        // it must then fail as unreachable, not wait forever nor take another query's answer.
        const asap = await sql.unsafe('select x from generate_series(1, 2) x', [], { prepare: true }).then(
          (rows) => rows,
          (err: Error) => err,
        );
        if (asap instanceof Error) expect(isDatabaseUnreachable(asap), asap.message).to.equal(true);
        else expectExactly(asap, [{ x: 1 }, { x: 2 }]);
        // The pool opens a new connection (the same postgres.js Connection) for the next queries.
        expectExactly(await sql.unsafe('select x from generate_series(1, 3) x', [], { prepare: true }), [{ x: 1 }, { x: 2 }, { x: 3 }]);
        expectExactly(await sql.unsafe('select y from generate_series(7, 8) y', [], { prepare: true }), [{ y: 7 }, { y: 8 }]);
      } finally {
        await proxy.close();
      }
    });
  }
});
