import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A provider in front of tron-local that the test can make fail (paths matching `failOn`), or lag
 * (paths matching `lagOn`, all by default; a load balancer with one lagging backend lags on some): a lagging node has no
 * block above `height` and answers `{}` for it, exactly as it answers for an empty block
 * (`getblockbynum` and `gettransactioninfobyblocknum` alike), leaves it out of a
 * `getblockbylimitnext` answer (`{}` when it has none of the blocks) and its now-block is `height`.
 */
export async function tronProxy(target: () => string) {
  const state = {
    failOn: null as RegExp | null,
    height: Infinity,
    lagOn: /getnowblock|getblockbynum|getblockbylimitnext|gettransactioninfobyblocknum/,
    /** Requests matching `holdOn` after the first `holdAfter` of them wait in `held` until released. */
    holdOn: null as RegExp | null,
    holdAfter: 0,
    held: [] as (() => void)[],
  };
  let matchedHold = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const send = (status: number, answer: string) => res.writeHead(status, { 'content-type': 'application/json' }).end(answer);
      if (state.failOn?.test(req.url ?? '')) return send(503, '{"Error":"unavailable"}');
      if (state.holdOn?.test(req.url ?? '') && ++matchedHold > state.holdAfter) await new Promise<void>((r) => state.held.push(r));
      const num = body.trim() ? Number(JSON.parse(body).num ?? 0) : 0;
      const lags = state.lagOn.test(req.url ?? '');
      if (lags && /getblockbynum|gettransactioninfobyblocknum/.test(req.url ?? '') && num > state.height) return send(200, '{}');
      let url = `${target()}${req.url}`;
      if (lags && /getblockbylimitnext/.test(req.url ?? '') && Number.isFinite(state.height)) {
        const upstream = (await (await fetch(url, { method: 'POST', body })).json()) as { block?: { block_header: { raw_data: { number: number } } }[] };
        const kept = (upstream.block ?? []).filter((b) => b.block_header.raw_data.number <= state.height);
        return send(200, JSON.stringify(kept.length > 0 ? { block: kept } : {}));
      }
      let forwarded = body;
      if (lags && /getnowblock/.test(req.url ?? '') && Number.isFinite(state.height)) {
        // Its own head: the upstream block at its height (or the upstream's, if that is lower).
        const upstream = (await (await fetch(url, { method: 'POST', body })).json()) as { block_header: { raw_data: { number: number } } };
        if (upstream.block_header.raw_data.number <= state.height) return send(200, JSON.stringify(upstream));
        url = url.replace('getnowblock', 'getblockbynum');
        forwarded = JSON.stringify({ num: state.height });
      }
      const answer = await fetch(url, { method: 'POST', body: forwarded });
      send(answer.status, await answer.text());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const release = () => {
    state.holdOn = null;
    for (const r of state.held.splice(0)) r();
  };
  return { url, state, release, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) };
}
