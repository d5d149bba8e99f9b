import { expect } from 'chai';
import request from 'supertest';
import { generateKeyPairSync } from 'node:crypto';
import { encodeBase58, getAddress } from 'ethers';
import { address, getProgramDerivedAddress } from '@solana/kit';
import { and, eq } from 'drizzle-orm';
import { auditLog, refunds } from '../../db/schema';
import { checkRefundDestination } from '../../core/refunds/destination';
import { buildTestApp, createTestOrg, testDb, type TestOrg, TEST_REDIS_PREFIX } from '../helpers/harness';
import { eventsOf, tokenEnv } from '../helpers/orders';
import { randomEvmAddress, randomTronAddress, seedPoolAddresses } from '../helpers/pool';
import { paidOrder } from '../helpers/refunds';

/** The refund claim page /refund/<token> over HTTP: what it shows, the address checks, the no-JS form, the public write kit. */
describe('refund claim page', () => {
  const PUBLIC = 'https://pay.example.com';
  const t = buildTestApp({ style: 'b', env: { ...tokenEnv(), PUBLIC_BASE_URL: PUBLIC, PAGE_RATE_LIMIT_PER_MINUTE: '1000000', REDIS_PREFIX: `${TEST_REDIS_PREFIX}rcp` } });
  let org: TestOrg;
  let pool: string[];

  before(async () => {
    org = await createTestOrg('Refund <Shop>');
    pool = await seedPoolAddresses(org.organizationId, 'evm', 20);
  });

  async function issued(received = 12_500_000n) {
    const order = await paidOrder(t, org, '10', received);
    const res = await request(t.app).post(`/api/v1/orders/${order.orderId}/refunds`).set('X-API-Key', org.keys.admin).send({ reason: 'excess' });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return { ...res.body, path: new URL(res.body.claimUrl).pathname as string, token: res.body.claimUrl.split('/').pop() as string };
  }
  const formPost = (path: string, fields: Record<string, string>, lang = 'en') =>
    request(t.app).post(`${path}?lang=${lang}`).set('Origin', PUBLIC).type('form').send(new URLSearchParams(fields).toString());
  const stored = async (id: string) => (await testDb().select().from(refunds).where(eq(refunds.id, id)))[0];

  it('shows the amount, token and network with a plain form, under the public pages\' headers', async () => {
    const refund = await issued();
    const res = await request(t.app).get(refund.path);
    expect(res.status).to.equal(200);
    expect(res.headers['content-security-policy']).to.include("script-src 'self'");
    expect(res.headers['referrer-policy']).to.equal('no-referrer');
    expect(res.headers['cache-control']).to.equal('no-store');
    expect(res.text).to.include('2.5 USDT');
    expect(res.text).to.include('Refund from Refund &lt;Shop&gt;');
    expect(res.text).to.include(refund.tokenAddress);
    expect(res.text).to.match(/<form method="post" action="\/refund\/[A-Za-z0-9_-]{22}\?lang=en"/);
    expect(res.text).to.not.match(/https?:\/\/(?!pay\.example\.com)[^"']*\.(js|css)/);
    const es = await request(t.app).get(refund.path).set('Accept-Language', 'es');
    expect(es.text).to.include('Reembolso de');
    expect(es.text).to.include('Su dirección otra vez');
  });

  it('an unknown or malformed token is 404 like the payment page\'s', async () => {
    expect((await request(t.app).get('/refund/AAAAAAAAAAAAAAAAAAAAAA')).status).to.equal(404);
    expect((await request(t.app).get('/refund/nope')).status).to.equal(404);
    expect((await formPost('/refund/AAAAAAAAAAAAAAAAAAAAAA', { destination: randomEvmAddress(), confirmation: randomEvmAddress() })).status).to.equal(404);
  });

  it('refuses bad addresses with a clear sentence in the page\'s language and changes nothing', async () => {
    const refund = await issued();
    const good = randomEvmAddress();
    const badChecksum = good.slice(0, 2) + [...good.slice(2)].map((c) => (/[a-f]/.test(c) ? c.toUpperCase() : /[A-F]/.test(c) ? c.toLowerCase() : c)).join('');
    expect(() => getAddress(badChecksum)).to.throw();
    const cases: [Record<string, string>, string][] = [
      [{ destination: badChecksum, confirmation: badChecksum }, 'not a valid address on this network'],
      [{ destination: '0x0000000000000000000000000000000000000000', confirmation: '0x0000000000000000000000000000000000000000' }, 'zero address'],
      [{ destination: pool[3], confirmation: pool[3] }, 'payment address of this service'],
      [{ destination: refund.tokenAddress, confirmation: refund.tokenAddress }, 'token contract itself'],
      [{ destination: good, confirmation: randomEvmAddress() }, 'two addresses are not the same'],
      [{ destination: '', confirmation: '' }, 'Enter the address'],
    ];
    for (const [fields, sentence] of cases) {
      const res = await formPost(refund.path, fields);
      expect(res.status, sentence).to.equal(400);
      expect(res.text).to.include(sentence);
      expect(res.text).to.include('id="form-problem"');
    }
    const es = await formPost(refund.path, { destination: '0x0000000000000000000000000000000000000000', confirmation: '0x0000000000000000000000000000000000000000' }, 'es');
    expect(es.text).to.include('Es la dirección cero');
    const row = await stored(refund.id);
    expect(row).to.include({ status: 'awaiting_claim', destination: null, claimedAt: null });
    expect((await eventsOf(org.organizationId, 'refund.claimed')).filter((e) => (e.data as { id: string }).id === refund.id)).to.have.length(0);
  });

  it('claims with the no-JS form (same origin): 303 back to the page, which says what happens next; once', async () => {
    const refund = await issued();
    const destination = randomEvmAddress();
    const res = await formPost(refund.path, { destination: destination.toLowerCase(), confirmation: destination });
    expect(res.status).to.equal(303);
    expect(res.headers.location).to.equal(`${refund.path}?lang=en`);
    const row = await stored(refund.id);
    expect(row).to.include({ status: 'claimed', destination });
    const page = await request(t.app).get(refund.path);
    expect(page.text).to.include('Thank you: we have your address');
    expect(page.text).to.include(destination);
    expect(page.text).to.not.include('id="claim-form"');
    const events = (await eventsOf(org.organizationId, 'refund.claimed')).filter((e) => (e.data as { id: string }).id === refund.id);
    expect(events).to.have.length(1);
    const audit = await testDb().select().from(auditLog).where(and(eq(auditLog.target, refund.id), eq(auditLog.action, 'refund.claimed')));
    expect(audit[0].actor).to.equal('payer (claim page)');
    // Claimed once: a second claim changes nothing.
    const again = await formPost(refund.path, { destination: randomEvmAddress().toLowerCase(), confirmation: destination.toLowerCase() });
    expect(again.status).to.equal(409);
    expect((await stored(refund.id)).destination).to.equal(destination);
  });

  it('the public write kit: cross-site posts refused, bodies limited, JSON answered in JSON', async () => {
    const refund = await issued();
    const destination = randomEvmAddress();
    const cross = await request(t.app).post(refund.path).set('Origin', 'https://evil.example').type('form').send(`destination=${destination}&confirmation=${destination}`);
    expect(cross.status).to.equal(403);
    const noOrigin = await request(t.app).post(refund.path).type('form').send(`destination=${destination}&confirmation=${destination}`);
    expect(noOrigin.status).to.equal(403);
    const big = await request(t.app).post(refund.path).set('Origin', PUBLIC).type('form').send(`destination=${'a'.repeat(200_000)}`);
    expect(big.status).to.equal(413);
    expect((await stored(refund.id)).status).to.equal('awaiting_claim');
    const refused = await request(t.app).post(refund.path).set('Content-Type', 'application/json').send({ destination: '0x0000000000000000000000000000000000000000', confirmation: '0x0000000000000000000000000000000000000000' });
    expect(refused.status).to.equal(400);
    expect(refused.body).to.include({ error: 'ADDRESS_REFUSED', reason: 'zero_address' });
    const ok = await request(t.app).post(refund.path).set('Content-Type', 'application/json').send({ destination, confirmation: destination });
    expect(ok.status).to.equal(200);
    expect(ok.body).to.deep.equal({ status: 'claimed', destination });
  });

  it('a cancelled refund\'s link is gone', async () => {
    const refund = await issued();
    await request(t.app).post(`/api/v1/refunds/${refund.id}/cancel`).set('X-API-Key', org.keys.admin).send({});
    expect((await request(t.app).get(refund.path)).status).to.equal(410);
    const destination = randomEvmAddress();
    expect((await formPost(refund.path, { destination, confirmation: destination })).status).to.equal(410);
  });

  it('checks Tron (base58check) and Solana (on the curve) destinations', async () => {
    const tron = { protocol: 'tron' as const, tokenAddress: 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf' };
    const tronAddress = randomTronAddress();
    expect(await checkRefundDestination(testDb(), tron, tronAddress, tronAddress)).to.deep.equal({ ok: true, address: tronAddress });
    const broken = tronAddress.slice(0, -1) + (tronAddress.endsWith('a') ? 'b' : 'a');
    expect(await checkRefundDestination(testDb(), tron, broken, broken)).to.deep.include({ ok: false });
    expect(await checkRefundDestination(testDb(), tron, 'T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb', 'T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb')).to.deep.equal({ ok: false, refusal: { code: 'zero_address' } });
    expect(await checkRefundDestination(testDb(), tron, tron.tokenAddress, tron.tokenAddress)).to.deep.equal({ ok: false, refusal: { code: 'token_contract' } });

    const solana = { protocol: 'solana' as const, tokenAddress: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v' };
    // A wallet's own address: an ed25519 public key.
    const spki = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' });
    const onCurve = encodeBase58(spki.subarray(spki.length - 32));
    expect(await checkRefundDestination(testDb(), solana, onCurve, onCurve)).to.deep.equal({ ok: true, address: onCurve });
    // An associated token account (a program-derived address): off the curve, no key can sign for it.
    const [pda] = await getProgramDerivedAddress({ programAddress: address('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL'), seeds: ['stablegate refund test'] });
    expect(await checkRefundDestination(testDb(), solana, pda, pda)).to.deep.equal({ ok: false, refusal: { code: 'off_curve' } });
  });
});
