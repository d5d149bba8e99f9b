import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { generateKeyPairSigner } from '@solana/kit';
import { SolanaLocalClient } from '../../scripts/local-chain/solana/payer';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';

/**
 * solana-local answers in the shapes of the real API: the same keys at every level as the
 * references written by hand from the documented JSON-RPC format (test/fixtures/solana/README.md,
 * `documented.*.json`). Values differ (illustrative there); keys, nesting and the JSON-RPC
 * envelope must not.
 */

const fixture = (name: string) => JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/solana', name), 'utf8'));

/** Every object in the value, by path (array elements merged under `[]`), with its keys; and the paths of empty arrays. */
function keysByPath(value: unknown, at = '$', out = { objects: new Map<string, Set<string>>(), emptyArrays: new Set<string>() }) {
  if (Array.isArray(value)) {
    if (value.length === 0) out.emptyArrays.add(`${at}[]`);
    for (const v of value) keysByPath(v, `${at}[]`, out);
  } else if (value && typeof value === 'object') {
    const keys = out.objects.get(at) ?? new Set<string>();
    for (const [k, v] of Object.entries(value)) {
      keys.add(k);
      keysByPath(v, `${at}.${k}`, out);
    }
    out.objects.set(at, keys);
  }
  return out;
}

/**
 * Same keys at every object path both have; every object path of the recording exists here too,
 * unless it lies inside an array that is empty here (this chain's transaction had no such element).
 */
function expectSameShape(ours: unknown, recorded: unknown, allowedExtra: Record<string, string[]> = {}): void {
  const { objects: mine, emptyArrays } = keysByPath(ours);
  const { objects: theirs } = keysByPath(recorded);
  for (const [at, keys] of theirs) {
    if (!mine.has(at) && [...emptyArrays].some((empty) => at.startsWith(empty))) continue;
    expect(mine.has(at), `solana-local has no object at ${at}`).to.equal(true);
    const extra = new Set(allowedExtra[at] ?? []);
    expect([...mine.get(at)!].filter((k) => !extra.has(k)).sort(), `keys at ${at}`).to.deep.equal([...keys].sort());
  }
}

async function rpc(url: string, method: string, params: unknown[]): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  return (await res.json()) as Record<string, unknown>;
}

describe('solana-local answers shaped like the documented real API', function () {
  this.timeout(60_000);
  let chain: RunningSolanaLocal;
  let client: SolanaLocalClient;
  let owner: string;
  before(async () => {
    chain = await startSolanaLocal({ dataDir: null, slotMs: 0, finalizationLag: 2 });
    client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    owner = (await generateKeyPairSigner()).address;
  });
  after(async () => {
    await chain.stop();
  });

  it('getTransaction of a v0 payment through a lookup table: as documented', async () => {
    // The recipient's account is created in the paying transaction (inner instructions) and comes from the table.
    const paid = await client.payWithLookupTable((await generateKeyPairSigner()).address, 1_000n, 'USDC');
    expect(paid.createdTokenAccount).to.equal(true);
    const answer = await rpc(chain.url, 'getTransaction', [paid.signature, { encoding: 'json', maxSupportedTransactionVersion: 0, commitment: 'confirmed' }]);
    expect(Object.keys(answer).sort()).to.deep.equal(['id', 'jsonrpc', 'result']);
    expectSameShape(answer.result, fixture('documented.gettransaction.v0.json'));
  });

  it('getBlock of a v0 transaction with loaded addresses (rewards off): as documented', async () => {
    const paid = await client.payWithLookupTable(owner, 2_000n, 'USDT');
    const answer = await rpc(chain.url, 'getBlock', [paid.slot, { encoding: 'json', maxSupportedTransactionVersion: 0, transactionDetails: 'full', rewards: false, commitment: 'confirmed' }]);
    const documented = fixture('documented.getblock.v0-rewards-off.json');
    expectSameShape(answer.result, documented);
    const tx = (answer.result as { transactions: { meta: { rewards: unknown } }[] }).transactions[0];
    expect(tx.meta.rewards).to.equal(documented.transactions[0].meta.rewards); // null with rewards off
  });

  it('getBlock of a failed legacy transaction (rewards on): as documented', async () => {
    // A successful and a failed transaction in one block, as in the reference.
    const ok = await client.pay(owner, 5n, 'USDT', { legacy: true, waitFor: 'none' });
    const failed = await client.payFailing(owner, 'USDT', { legacy: true });
    expect(failed.err).to.not.equal(null);
    expect((await client.waitFor(ok.signature)).slot).to.equal(failed.slot);
    const answer = await rpc(chain.url, 'getBlock', [failed.slot, { encoding: 'json', commitment: 'confirmed' }]);
    expectSameShape(answer.result, fixture('documented.getblock.legacy-failed-rewards-on.json'));
    const metas = (answer.result as { transactions: { meta: { status: unknown; err: unknown } }[] }).transactions.map((t) => t.meta);
    expect(metas.map((m) => m.status)).to.deep.equal([{ Ok: null }, { Err: { InstructionError: [0, { Custom: 1 }] } }]);
    expect(metas[1].err).to.deep.equal({ InstructionError: [0, { Custom: 1 }] });
  });

  it('getSignaturesForAddress, envelope included: as documented', async () => {
    const paid = await client.pay(owner, 3n, 'USDC');
    await client.waitFor(paid.signature, 'finalized');
    const answer = await rpc(chain.url, 'getSignaturesForAddress', [paid.tokenAccount, { limit: 3 }]);
    expectSameShape(answer, fixture('documented.getsignaturesforaddress.json'));
  });
});
