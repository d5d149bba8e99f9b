import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SolanaRpcClient, SolanaUnavailableError } from '../../core/chains/solana/solana-rpc';

/**
 * JSON-RPC batches (blocks mode reads blocks ten at a time): each answer is matched to its request
 * by its id whatever order the provider used, an answer list that does not answer every id exactly
 * once fails the call, an answer about the provider inside a batch fails the whole batch over to
 * the next provider, and an answer about the chain is returned as it is.
 */

type Answer = (request: { id: number; method: string; params: unknown[] }) => unknown;

async function provider(
  answer: Answer,
  options: { reverse?: boolean; rewrite?: (answers: { id: unknown }[]) => unknown[] } = {},
): Promise<{ url: string; bodies: unknown[]; close(): Promise<void> }> {
  const bodies: unknown[] = [];
  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw) as { id: number; method: string; params: unknown[] }[];
    bodies.push(body);
    let answers: unknown[] = body.map((r) => ({ jsonrpc: '2.0', id: r.id, ...(answer(r) as object) }));
    if (options.reverse) answers.reverse();
    if (options.rewrite) answers = options.rewrite(answers as { id: unknown }[]);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answers));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('Solana RPC batches', () => {
  const servers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('sends one HTTP request for the batch and matches the answers to the requests by id, chain errors as they are', async () => {
    const p = await provider((r) => (r.params[0] === 12 ? { error: { code: -32007, message: 'Slot 12 was skipped' } } : { result: { slot: r.params[0] } }), { reverse: true });
    servers.push(p);
    const client = new SolanaRpcClient('solana-test', [p.url]);
    const answers = await client.batch('getBlock', [[10, {}], [11, {}], [12, {}]]);
    expect(answers.map((a) => a.result ?? a.error?.code)).to.deep.equal([{ slot: 10 }, { slot: 11 }, -32007]);
    expect(p.bodies).to.have.length(1);
    expect((p.bodies[0] as { method: string }[]).map((r) => r.method)).to.deep.equal(['getBlock', 'getBlock', 'getBlock']);
    expect([client.calls, client.httpRequests]).to.deep.equal([3, 1]);
  });

  it('answers in any order land on their own request (shuffled, not only reversed)', async () => {
    const order = [3, 0, 4, 1, 2];
    const p = await provider((r) => ({ result: { slot: r.params[0] } }), { rewrite: (answers) => order.map((i) => answers[i]) });
    servers.push(p);
    const client = new SolanaRpcClient('solana-test', [p.url]);
    const answers = await client.batch('getBlock', [[20], [21], [22], [23], [24]]);
    expect(answers.map((a) => a.result)).to.deep.equal([{ slot: 20 }, { slot: 21 }, { slot: 22 }, { slot: 23 }, { slot: 24 }]);
  });

  for (const [name, rewrite] of [
    ['an answer missing', (answers: { id: unknown }[]) => answers.slice(1)],
    ['an id answered twice in place of another', (answers: { id: unknown }[]) => [answers[0], answers[0], answers[2]]],
    ['an id that was not asked', (answers: { id: unknown }[]) => [answers[0], answers[1], { ...answers[2], id: 7 }]],
    ['an answer that is not a list', () => ({ jsonrpc: '2.0', id: 0, result: { slot: 10 } }) as unknown as unknown[]],
  ] as const) {
    it(`fails the call, never guesses, on ${name}`, async () => {
      const p = await provider((r) => ({ result: { slot: r.params[0] } }), { rewrite });
      servers.push(p);
      const client = new SolanaRpcClient('solana-test', [p.url]);
      let failure: unknown = null;
      await client.batch('getBlock', [[10], [11], [12]]).catch((err) => (failure = err));
      expect(failure).to.be.instanceOf(Error);
      expect(String((failure as Error).message)).to.match(/getBlock batch of 3/);
    });
  }

  it('a provider fault inside a batch (node behind) sends the whole batch to the next provider', async () => {
    const behind = await provider((r) => (r.id === 1 ? { error: { code: -32005, message: 'Node is behind by 50 slots' } } : { result: 'stale' }));
    const healthy = await provider((r) => ({ result: `block ${String(r.params[0])}` }));
    servers.push(behind, healthy);
    const client = new SolanaRpcClient('solana-test', [behind.url, healthy.url]);
    const answers = await client.batch('getBlock', [[1], [2]]);
    expect(answers.map((a) => a.result)).to.deep.equal(['block 1', 'block 2']);
    expect([behind.bodies.length, healthy.bodies.length]).to.deep.equal([1, 1]);
  });

  it("a 429 backs the provider off for what its Retry-After says (seconds or an HTTP date, on the client's clock), else 10 s", async () => {
    // A clock that moves only when stepped, at a whole second (an HTTP date has no milliseconds).
    let nowMs = Date.parse('2026-01-01T00:00:00Z');
    const clock = { now: () => new Date(nowMs) };
    let retryAfter: string | null = null;
    let limited = true;
    let requests = 0;
    const server = http.createServer(async (req, res) => {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      requests++;
      if (limited) return void res.writeHead(429, retryAfter === null ? {} : { 'retry-after': retryAfter }).end('{}');
      const body = JSON.parse(raw) as { id: number }[];
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body.map((r) => ({ jsonrpc: '2.0', id: r.id, result: 'ok' }))));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    servers.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    const lines: [Record<string, unknown>, string][] = [];
    const client = new SolanaRpcClient('solana-test', [`http://127.0.0.1:${(server.address() as AddressInfo).port}`], { clock, logger: { warn: (o, m) => void lines.push([o as Record<string, unknown>, m]) } });
    const failure = () => client.batch('getBlock', [[1]]).then(() => expect.fail('expected a failure'), (err: Error) => err);
    for (const [header, windowMs] of [['7', 7_000], [() => new Date(nowMs + 4_000).toUTCString(), 4_000], [null, 10_000]] as const) {
      limited = true;
      retryAfter = typeof header === 'function' ? header() : header;
      const first = await failure();
      expect(first).to.be.instanceOf(SolanaUnavailableError);
      expect(first.message).to.contain('HTTP 429');
      if (header === '7') expect(client.pool.anyAnswered, 'a 429 is no answer').to.equal(false);
      const asked = requests;
      nowMs += windowMs - 1;
      expect((await failure()).message).to.contain('backed off');
      expect(requests, 'not asked within the window').to.equal(asked);
      nowMs += 1;
      limited = false;
      expect((await client.batch('getBlock', [[1]])).map((a) => a.result)).to.deep.equal(['ok']);
    }
    expect(lines.filter(([, m]) => m.includes('rate-limited us')).map(([o]) => o.backoffMs)).to.deep.equal([7_000, 4_000, 10_000]);
    expect(lines.filter(([, m]) => m === 'Solana provider answers again')).to.have.length(3);
    expect(client.pool.anyAnswered).to.equal(true);
  });

  it('no provider answering fit is SolanaUnavailableError', async () => {
    const behind = await provider(() => ({ error: { code: -32005, message: 'Node is unhealthy' } }));
    servers.push(behind);
    const client = new SolanaRpcClient('solana-test', [behind.url]);
    let failure: unknown = null;
    await client.batch('getBlock', [[1]]).catch((err) => (failure = err));
    expect(failure).to.be.instanceOf(SolanaUnavailableError);
  });
});
