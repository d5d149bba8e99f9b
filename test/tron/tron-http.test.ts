import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { TronHttp, TronUnavailableError } from '../../core/chains/tron/tron-http';
import { ManualClock } from '../../core/platform/clock';

const fixture = (name: string): string => readFileSync(path.join(__dirname, '../fixtures/tron', name), 'utf8');

/** A provider answering recorded documentation answers, or a status the test chooses. */
async function provider(answer: (req: http.IncomingMessage, body: string) => { status: number; body: string }) {
  const seen: { path: string; key: string | undefined; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', key: req.headers['tron-pro-api-key'] as string | undefined, body });
      const a = answer(req, body);
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const recorded = (req: http.IncomingMessage) => {
  if (req.url === '/walletsolidity/getnowblock' || req.url === '/wallet/getnowblock') return { status: 200, body: fixture('getnowblock.nile.json') };
  if (req.url?.endsWith('/getblockbynum')) return { status: 200, body: fixture('getblockbynum.nile-66987565.json') };
  if (req.url?.endsWith('/gettransactioninfobyblocknum')) return { status: 200, body: fixture('txinfos.nile-usdt-transfer.json') };
  if (req.url === '/wallet/triggerconstantcontract') return { status: 200, body: fixture('triggerconstantcontract.nile-balanceof.json') };
  return { status: 404, body: '{}' };
};

describe('Tron HTTP client', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });

  it('reads blocks, transaction infos and constant calls in the documented formats, with the API key as a header', async () => {
    const p = await provider(recorded);
    closers.push(p.close);
    const client = new TronHttp('tron-nile', [p.url], { apiKey: 'k-secret-123' });
    const head = await client.nowBlock('walletsolidity');
    expect(head?.block_header.raw_data.number).to.equal(66987627);
    expect((await client.blockByNum('wallet', 66987565))?.blockID).to.equal('0000000003fe262d52bfa4b2814f816fd2e57af5b98a33d60d8630a03a908e0e');
    const infos = await client.transactionInfoByBlockNums('walletsolidity', [1, 2, 3]);
    expect(infos.map((i) => i.length)).to.deep.equal([1, 1, 1]);
    expect(await client.constantCall('41eca9bc828a3005b9a3b909f2cc5c2a54794de05f', 'decimals()')).to.equal('0000000000000000000000000000000000000000000000000000000040cfcc00');
    expect(p.seen.every((s) => s.key === 'k-secret-123')).to.equal(true);
    expect(JSON.parse(p.seen.find((s) => s.path.endsWith('gettransactioninfobyblocknum'))!.body)).to.deep.equal({ num: 1 });
    expect(client.calls).to.equal(6);
  });

  it('reads a range of blocks with getblockbylimitnext ([startNum, endNum), {"block": [...]}; {} when none), at most 100 a request', async () => {
    let answer = `{"block":[${fixture('getblockbynum.nile-66987565.json')}]}`;
    const p = await provider(() => ({ status: 200, body: answer }));
    closers.push(p.close);
    const client = new TronHttp('tron-nile', [p.url]);
    const blocks = await client.blocksByRange('walletsolidity', 66987565, 66987567);
    expect(blocks.map((b) => b.block_header.raw_data.number)).to.deep.equal([66987565]);
    expect(p.seen.map((s) => [s.path, JSON.parse(s.body)])).to.deep.equal([['/walletsolidity/getblockbylimitnext', { startNum: 66987565, endNum: 66987567 }]]);
    answer = '{}';
    expect(await client.blocksByRange('wallet', 66987565, 66987567)).to.deep.equal([]);
    await client.blocksByRange('wallet', 1, 102).then(
      () => expect.fail('expected a refusal'),
      (err: Error) => expect(err.message).to.match(/at most 100 blocks/),
    );
    expect(client.calls).to.equal(2);
  });

  it('a failing provider is backed off exponentially up to its cap, logged once per episode, and logged again when it answers', async () => {
    let status = 500;
    const p = await provider(() => ({ status, body: status === 200 ? fixture('getnowblock.nile.json') : '{}' }));
    closers.push(p.close);
    // A clock that moves only when stepped, so each window can be probed to the millisecond.
    let nowMs = Date.now();
    const clock = { now: () => new Date(nowMs), advance: (ms: number) => void (nowMs += ms) };
    const lines: [Record<string, unknown>, string][] = [];
    const client = new TronHttp('tron-nile', [`${p.url}/key-in-path`], { clock, logger: { warn: (o, m) => void lines.push([o as Record<string, unknown>, m]) } });
    const fails = () => client.nowBlock('wallet').then(() => expect.fail('expected a failure'), (err: Error) => err);
    // 0.5 s, 1 s, 2 s, 4 s, 8 s, then 10 s (the cap): each window is kept, and asked again when over.
    for (const backoffMs of [500, 1000, 2000, 4000, 8000, 10_000, 10_000]) {
      expect((await fails()).message).to.contain('HTTP 500');
      const asked = p.seen.length;
      clock.advance(backoffMs - 1);
      expect((await fails()).message).to.contain('backed off');
      expect(p.seen).to.have.length(asked);
      clock.advance(1);
    }
    status = 200;
    expect((await client.nowBlock('wallet'))?.block_header.raw_data.number).to.equal(66987627);
    expect(lines.map(([, m]) => m)).to.deep.equal(['Tron provider failed: backing off and using the next one', 'Tron provider answers again']);
    expect(lines[0][0]).to.include({ chainId: 'tron-nile', provider: p.url, path: '/wallet/getnowblock', status: 500, backoffMs: 500 });
    expect(JSON.stringify(lines)).not.to.contain('key-in-path');
  });

  it('an empty block answers [] or {}: no transactions; an {"Error"} answer is a failure', async () => {
    let answer = '[]';
    const p = await provider(() => ({ status: 200, body: answer }));
    closers.push(p.close);
    const client = new TronHttp('tron-nile', [p.url], { baseBackoffMs: 1 });
    expect(await client.transactionInfoByBlockNum('walletsolidity', 5)).to.deep.equal([]);
    answer = '{}';
    expect(await client.transactionInfoByBlockNum('walletsolidity', 5)).to.deep.equal([]);
    answer = '{"Error":"class java.lang.NumberFormatException : x"}';
    await client.transactionInfoByBlockNum('walletsolidity', 5).then(
      () => expect.fail('expected a failure'),
      (err) => expect(err).to.be.instanceOf(TronUnavailableError),
    );
  });

  it('a 429 backs the provider off for the penalty window and uses the next; log lines never carry the key or a URL path', async () => {
    const limited = await provider(() => ({ status: 429, body: '{}' }));
    const healthy = await provider(recorded);
    closers.push(limited.close, healthy.close);
    const lines: unknown[] = [];
    const logger = { warn: (o: object, m: string) => void lines.push([o, m]) };
    const clock = new ManualClock();
    const client = new TronHttp('tron-nile', [`${limited.url}/secret-path-token`, healthy.url], { apiKey: 'k-secret-123', logger, clock });
    expect((await client.nowBlock('wallet'))?.block_header.raw_data.number).to.equal(66987627);
    clock.advance(29_000);
    expect((await client.nowBlock('wallet'))?.block_header.raw_data.number).to.equal(66987627);
    expect(limited.seen).to.have.length(1); // the next call starts at the provider that answered
    expect(lines.map((l) => (l as [object, string])[1])).to.deep.equal(['Tron provider rate-limited us: backing off and using the next one']);
    expect(JSON.stringify(lines)).to.contain('rate-limited');
    expect(JSON.stringify(lines)).not.to.contain('k-secret-123');
    expect(JSON.stringify(lines)).not.to.contain('secret-path-token');
  });

  it('when every provider is backed off the call fails (the job retries later), then recovers', async () => {
    let status = 429;
    const p = await provider((req) => (status === 200 ? recorded(req) : { status, body: '{}' }));
    closers.push(p.close);
    const clock = new ManualClock();
    const lines: [object, string][] = [];
    const client = new TronHttp('tron-nile', [p.url], { clock, logger: { warn: (o, m) => void lines.push([o, m]) } });
    await client.nowBlock('wallet').then(
      () => expect.fail('expected a failure'),
      (err) => expect(err).to.be.instanceOf(TronUnavailableError),
    );
    status = 200;
    clock.advance(29_000);
    await client.nowBlock('wallet').then(
      () => expect.fail('still backed off'),
      (err) => expect(err.message).to.contain('backed off'),
    );
    expect(p.seen).to.have.length(1);
    clock.advance(1_000); // TronGrid's penalty window (30 s) is over
    expect((await client.nowBlock('wallet'))?.block_header.raw_data.number).to.equal(66987627);
    expect(lines.map(([, m]) => m)).to.deep.equal(['Tron provider rate-limited us: backing off and using the next one', 'Tron provider answers again']);
  });

  it('the per-provider limiter bounds requests in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const server = http.createServer((req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight--;
        res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
      }, 20);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => server.close(() => r())));
    const client = new TronHttp('tron-nile', [`http://127.0.0.1:${(server.address() as AddressInfo).port}`], { maxConcurrent: 3 });
    await client.transactionInfoByBlockNums('walletsolidity', Array.from({ length: 12 }, (_, i) => i + 1));
    expect(most).to.equal(3);
  });
});
