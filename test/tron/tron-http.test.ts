import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { TronHttp, TronUnavailableError } from '../../core/chains/tron/tron-http';

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
    const client = new TronHttp('tron-nile', [`${limited.url}/secret-path-token`, healthy.url], { apiKey: 'k-secret-123', rateLimitBackoffMs: 300, logger });
    expect((await client.nowBlock('wallet'))?.block_header.raw_data.number).to.equal(66987627);
    expect((await client.nowBlock('wallet'))?.block_header.raw_data.number).to.equal(66987627);
    expect(limited.seen).to.have.length(1); // backed off: not asked again within the window
    expect(JSON.stringify(lines)).to.contain('rate-limited');
    expect(JSON.stringify(lines)).not.to.contain('k-secret-123');
    expect(JSON.stringify(lines)).not.to.contain('secret-path-token');
  });

  it('when every provider is backed off the call fails (the job retries later), then recovers', async () => {
    let status = 429;
    const p = await provider((req) => (status === 200 ? recorded(req) : { status, body: '{}' }));
    closers.push(p.close);
    const client = new TronHttp('tron-nile', [p.url], { rateLimitBackoffMs: 200 });
    await client.nowBlock('wallet').then(
      () => expect.fail('expected a failure'),
      (err) => expect(err).to.be.instanceOf(TronUnavailableError),
    );
    status = 200;
    await client.nowBlock('wallet').then(
      () => expect.fail('still backed off'),
      (err) => expect(err.message).to.contain('backed off'),
    );
    // Not a race: the back-off (200 ms, on the real clock inside TronHttp) was set before this wait
    // began, so 250 ms are always past it, however busy the machine.
    await new Promise((r) => setTimeout(r, 250));
    expect((await client.nowBlock('wallet'))?.block_header.raw_data.number).to.equal(66987627);
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
