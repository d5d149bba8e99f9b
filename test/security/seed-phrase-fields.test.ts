import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Mnemonic } from 'ethers';
import request from 'supertest';
import { isChecksummedSeedPhrase } from '../../core/pool/secret-scan';
import { buildTestApp, capturedLogLines, createTestOrg, STYLES, type TestOrg } from '../helpers/harness';
import { CHAIN, orgFootprint, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { expectError } from '../helpers/wire';

const V1 = '/api/v1';
const phrase = () => Mnemonic.fromEntropy(randomBytes(16)).phrase;

describe('seed phrase detection in free-text fields', () => {
  it('knows a checksummed phrase however it is written, and lets ordinary text and hashes through', () => {
    const p = phrase();
    for (const form of [p, p.toUpperCase(), p.split(' ').join('-'), p.split(' ').map((w, i) => `${i + 1}. ${w}`).join('\n'), p.split(' ').map((w, i) => `${i + 1}.${w}`).join(' ')]) {
      expect(isChecksummedSeedPhrase(form), form.slice(0, 0)).to.equal(true);
    }
    // Twelve real words without a valid checksum (changing the last word breaks it, mostly).
    const words = p.split(' ');
    const broken = [...words.slice(0, 11), words[11] === 'zoo' ? 'abandon' : 'zoo'].join(' ');
    if (!Mnemonic.isValidMnemonic(broken)) expect(isChecksummedSeedPhrase(broken)).to.equal(false);
    expect(isChecksummedSeedPhrase(`0x${randomBytes(32).toString('hex')}`)).to.equal(false);
    expect(isChecksummedSeedPhrase('order for alice: two coffees and a cake, table 12')).to.equal(false);
  });
});

for (const style of STYLES) {
  describe(`seed phrases refused in references and metadata (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style, env: tokenEnv() });
    let org: TestOrg;
    beforeEach(async () => {
      org = await createTestOrg('Seed phrase org');
      await seedPoolAddresses(org.organizationId, 'evm', 3);
    });

    const order = (extra: Record<string, unknown>) => ({ orderReference: `o-${randomBytes(4).toString('hex')}`, amount: '10', currency: 'USDT', chainId: CHAIN, ...extra });
    const cases: { name: string; path: string; body: (secret: string) => object; field: string }[] = [
      { name: 'orderReference', path: '/orders', body: (s) => order({ orderReference: s }), field: 'orderReference' },
      { name: 'a metadata value of an order', path: '/orders', body: (s) => order({ metadata: { note: s } }), field: 'metadata.note' },
      { name: 'a metadata value of an order (hyphen-joined)', path: '/orders', body: (s) => order({ metadata: { a: s.split(' ').join('-') } }), field: 'metadata.a' },
      { name: 'depositReference (A bind)', path: '/deposits/bind', body: (s) => ({ depositReference: s, protocol: 'evm' }), field: 'depositReference' },
      { name: 'a metadata value of a binding (A bind)', path: '/deposits/bind', body: (s) => ({ depositReference: 'user-1', protocol: 'evm', metadata: { seed: s.toUpperCase() } }), field: 'metadata.seed' },
      { name: 'depositReference (B register)', path: '/deposits/references', body: (s) => ({ depositReference: s, currency: 'USDT', chainId: CHAIN }), field: 'depositReference' },
      { name: 'a metadata value (B register)', path: '/deposits/references', body: (s) => ({ depositReference: 'user-2', currency: 'USDT', chainId: CHAIN, metadata: { m: s } }), field: 'metadata.m' },
    ];
    for (const c of cases) {
      it(`refuses ${c.name} holding a checksummed seed phrase, naming only the field, storing and logging nothing`, async () => {
        const secret = phrase();
        const before = capturedLogLines.length;
        const res = await request(app).post(V1 + c.path).set('X-API-Key', org.keys.member).send(c.body(secret));
        expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
        // Nothing of the phrase is in the answer: another phrase gets the very same body.
        const other = await request(app).post(V1 + c.path).set('X-API-Key', org.keys.member).send(c.body(phrase()));
        expect(JSON.stringify(other.body)).to.equal(JSON.stringify(res.body));
        if (style === 'b') expect(res.body.details).to.deep.equal([{ field: c.field, kind: 'possible seed phrase', message: 'possible seed phrase' }]);
        expect(res.body.message).to.include(c.field);
        const after = await orgFootprint(org.organizationId);
        expect(after).to.include({ orderCount: 0, assignmentCount: 0, notAvailable: 0 });
        expect(capturedLogLines.slice(before).join('')).to.not.include(secret.split(' ').slice(0, 3).join(' '));
      });
    }

    it('accepts a 64-hex value (it may be a hash) and ordinary words', async () => {
      const res = await request(app)
        .post(V1 + '/orders')
        .set('X-API-Key', org.keys.member)
        .send(order({ orderReference: randomBytes(32).toString('hex'), metadata: { tx: `0x${randomBytes(32).toString('hex')}`, note: 'abandon ability able about above absent absorb abstract absurd abuse access' } }));
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
    });
  });
}
