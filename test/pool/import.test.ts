import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import request from 'supertest';
import { eq } from 'drizzle-orm';
import { HDNodeWallet, Mnemonic, Wallet, encodeBase58, concat, sha256 } from 'ethers';
import { poolAddresses } from '../../db/schema';
import { tronAddressFromEvm } from '../../core/chains/tron/tron-address';
import { buildTestApp, capturedLogLines, createTestOrg, STYLES, testDb, testSql, type TestOrg } from '../helpers/harness';
import { randomEvmAddress, randomSolanaAddress, randomTronAddress } from '../helpers/pool';
import { dataOf, expectError } from '../helpers/wire';

const HEADER = 'address,protocol,derivation_index,master_public_key';
const csv = (...lines: string[]) => [HEADER, ...lines].join('\n');

/** The import's validation failure carries success: false in both styles (the spec's import section). */
function expectImportError(style: 'a' | 'b', res: { status: number; body: any }, status: number, code: string, aName: string): void {
  expect(res.body.success, JSON.stringify(res.body)).to.equal(false);
  if (style === 'a') return expectError('a', res, status, code, aName);
  const { success: _success, ...rest } = res.body;
  expectError('b', { status: res.status, body: rest }, status, code, aName);
}

/** A fresh xpub made at test time (its private half is thrown away at once). */
function freshXpub(): { xpub: string; evm: (i: number) => string; tron: (i: number) => string } {
  const xpub = HDNodeWallet.createRandom().neuter().extendedKey;
  const node = HDNodeWallet.fromExtendedKey(xpub).deriveChild(0);
  return { xpub, evm: (i) => node.deriveChild(i).address, tron: (i) => tronAddressFromEvm(node.deriveChild(i).address) };
}

async function orgAddresses(organizationId: string): Promise<string[]> {
  const rows = await testDb().select({ a: poolAddresses.address }).from(poolAddresses).where(eq(poolAddresses.organizationId, organizationId));
  return rows.map((r) => r.a);
}

/** Flips the case of one letter of a checksummed address so the checksum no longer holds. */
function breakChecksum(address: string): string {
  const chars = address.split('');
  const i = chars.findIndex((c, k) => k > 1 && /[a-fA-F]/.test(c));
  chars[i] = chars[i] === chars[i].toLowerCase() ? chars[i].toUpperCase() : chars[i].toLowerCase();
  return chars.join('');
}

for (const style of STYLES) {
  describe(`address pool import (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style });
    let org: TestOrg;
    beforeEach(async () => {
      org = await createTestOrg('Import org');
    });
    const post = (body: unknown, key = org.keys.admin) => request(app).post('/api/v1/address-pool/import').set('X-API-Key', key).send(body as object);

    it('imports self-managed EVM addresses, normalising lowercase to checksum form', async () => {
      const a = randomEvmAddress();
      const b = randomEvmAddress();
      const res = await post({ protocol: 'evm', mode: 'self_managed', addresses: csv(`${a.toLowerCase()},evm,,`, `${b},evm,,`) });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const data = style === 'a' ? dataOf('a', res) : res.body;
      // success once: A's envelope carries it (not data again), B's flat body carries it.
      if (style === 'a') expect(data).to.not.have.property('success');
      else expect(data.success).to.equal(true);
      expect(data).to.deep.include({ imported: 2, skipped: 0, errors: [] });
      expect(data.summary).to.deep.include({ protocol: 'evm', mode: 'self_managed', derivation_range: null, master_public_key: null });
      expect((await orgAddresses(org.organizationId)).sort()).to.deep.equal([a, b].sort());
    });

    it('reports every invalid line with its exact line number, and imports nothing', async () => {
      const good = randomEvmAddress();
      const badChecksum = breakChecksum(randomEvmAddress());
      const lines = [
        `${good},evm,,`, // line 2: valid
        '0x1234,evm,,', // line 3: too short
        `${badChecksum},evm,,`, // line 4: wrong checksum
        `${randomEvmAddress()},tron,,`, // line 5: protocol mismatch
        '', // line 6: blank, ignored
        `${randomEvmAddress().slice(2)},evm,,`, // line 7: no 0x
        ',evm,,', // line 8: empty address
        `${randomEvmAddress()},evm,5,`, // line 9: index in self_managed
      ];
      const res = await post({ protocol: 'evm', mode: 'self_managed', addresses: csv(...lines) });
      expectImportError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
      const details = res.body.details as { line: number; address: string; error: string }[];
      expect(details.map((d) => d.line)).to.deep.equal([3, 4, 5, 7, 8, 9]);
      expect(details[0]).to.deep.include({ address: '0x1234' });
      expect(details[0].error).to.match(/0x followed by 40 hexadecimal/);
      expect(details[1]).to.deep.include({ address: badChecksum });
      expect(details[1].error).to.match(/checksum/);
      expect(details[2].error).to.match(/protocol "tron" does not match/);
      expect(details[3].error).to.match(/0x followed by 40/);
      expect(details[4].error).to.equal('address is empty');
      expect(details[5].error).to.match(/must be empty in self_managed/);
      expect(await orgAddresses(org.organizationId)).to.deep.equal([]);
    });

    it('reports malformed CSV lines, extra columns and a missing protocol with their lines; accepts quoted fields', async () => {
      const quoted = randomEvmAddress();
      const res = await post({
        protocol: 'evm',
        mode: 'self_managed',
        addresses: csv(`"${quoted}","evm","",""`, `"${randomEvmAddress()},evm,,`, `${randomEvmAddress()},evm,,,extra`, `${randomEvmAddress()},,,`),
      });
      expectImportError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(res.body.details.map((d: any) => [d.line, d.error])).to.deep.equal([
        [3, 'malformed CSV line (unterminated quote)'],
        [4, 'expected at most 4 columns, got 5'],
        [5, 'protocol is empty (expected evm)'],
      ]);
      const ok = await post({ protocol: 'evm', mode: 'self_managed', addresses: `\r\n${HEADER}\r\n"${quoted}","evm","",""\r\n` });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expect(await orgAddresses(org.organizationId)).to.deep.equal([quoted]);
    });

    it('validates Tron base58check and Solana 32-byte keys per line', async () => {
      const tron = randomTronAddress();
      const last = tron[tron.length - 1] === 'a' ? 'b' : 'a';
      const tamperedTron = tron.slice(0, -1) + last;
      const wrongPrefix = encodeBase58(concat(['0x42', randomBytes(20), '0x00000000']));
      const tronRes = await post({
        protocol: 'tron',
        mode: 'self_managed',
        addresses: csv(`${tron},tron,,`, `${tamperedTron},tron,,`, `${wrongPrefix},tron,,`, `0x${'ab'.repeat(20)},tron,,`),
      });
      expectImportError(style, tronRes, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(tronRes.body.details.map((d: any) => [d.line, d.address])).to.deep.equal([
        [3, tamperedTron],
        [4, wrongPrefix],
        [5, `0x${'ab'.repeat(20)}`],
      ]);
      expect(tronRes.body.details[0].error).to.match(/checksum/);
      expect(tronRes.body.details[1].error).to.match(/0x41 followed by 20 bytes/);
      expect(tronRes.body.details[2].error).to.match(/starting with T/);

      const sol = randomSolanaAddress();
      const shortKey = encodeBase58(concat(['0x01', randomBytes(30)])); // 31 bytes
      const withLeadingOnes = '1111' + encodeBase58(concat(['0x01', randomBytes(30)])).slice(0, 40); // wrong length in bytes
      const solRes = await post({
        protocol: 'solana',
        mode: 'self_managed',
        addresses: csv(`${sol},solana,,`, `${shortKey},solana,,`, `${withLeadingOnes},solana,,`, 'not-base58-0OIl,solana,,'),
      });
      expectImportError(style, solRes, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(solRes.body.details.map((d: any) => d.line)).to.deep.equal([3, 4, 5]);
      expect(solRes.body.details[0].error).to.match(/32-byte/);
      expect(await orgAddresses(org.organizationId)).to.deep.equal([]);

      const ok = await post({ protocol: 'solana', mode: 'self_managed', addresses: csv(`${sol},solana,,`) });
      expect(ok.status).to.equal(200);
      expect(await orgAddresses(org.organizationId)).to.deep.equal([sol]);
    });

    it('verifies hd_wallet EVM and Tron addresses against the xpub; a tampered one fails', async () => {
      const k = freshXpub();
      const evmRes = await post({
        protocol: 'evm',
        mode: 'hd_wallet',
        addresses: csv(`${k.evm(0)},evm,0,${k.xpub}`, `${k.evm(1)},evm,1,${k.xpub}`, `${k.evm(7)},evm,7,${k.xpub}`),
      });
      expect(evmRes.status, JSON.stringify(evmRes.body)).to.equal(200);
      const evm = style === 'a' ? dataOf('a', evmRes) : evmRes.body;
      expect(evm).to.deep.include({ imported: 3, skipped: 0 });
      expect(evm.summary).to.deep.include({ protocol: 'evm', mode: 'hd_wallet', derivation_range: { start: 0, end: 7 }, master_public_key: k.xpub, verified: true });

      const tronRes = await post({ protocol: 'tron', mode: 'hd_wallet', addresses: csv(`${k.tron(2)},tron,2,${k.xpub}`, `${k.tron(3)},tron,3,${k.xpub}`) });
      expect(tronRes.status, JSON.stringify(tronRes.body)).to.equal(200);
      expect((style === 'a' ? dataOf('a', tronRes) : tronRes.body).imported).to.equal(2);

      // Tampered: a valid address at the wrong index, another xpub's address, a bad index, a bad xpub.
      const other = freshXpub();
      const bad = await post({
        protocol: 'evm',
        mode: 'hd_wallet',
        addresses: csv(
          `${k.evm(10)},evm,10,${k.xpub}`,
          `${k.evm(11)},evm,12,${k.xpub}`,
          `${other.evm(13)},evm,13,${k.xpub}`,
          `${k.evm(14)},evm,,${k.xpub}`,
          `${k.evm(15)},evm,15,xpubNotAKey`,
          `${k.evm(16)},evm,16,`,
        ),
      });
      expectImportError(style, bad, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(bad.body.details.map((d: any) => d.line)).to.deep.equal([3, 4, 5, 6, 7]);
      expect(bad.body.details[0]).to.deep.include({ address: k.evm(11) });
      expect(bad.body.details[0].error).to.match(/does not derive from master_public_key at 0\/12/);
      expect(bad.body.details[1].error).to.match(/does not derive/);
      expect(bad.body.details[2].error).to.match(/derivation_index is required/);
      expect(bad.body.details[3].error).to.match(/not a valid extended public key/);
      expect(bad.body.details[4].error).to.match(/master_public_key is required/);

      const badTron = await post({ protocol: 'tron', mode: 'hd_wallet', addresses: csv(`${k.tron(4)},tron,5,${k.xpub}`) });
      expectImportError(style, badTron, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(badTron.body.details).to.have.length(1);
      expect(badTron.body.details[0]).to.deep.include({ line: 2, address: k.tron(4) });
      expect((await orgAddresses(org.organizationId)).length).to.equal(5);
    });

    it('refuses Solana hd_wallet with a 400 that says why (ed25519 derivation is hardened only) and imports nothing; self_managed is accepted', async () => {
      const a = randomSolanaAddress();
      const before = (await orgAddresses(org.organizationId)).length;
      const res = await post({ protocol: 'solana', mode: 'hd_wallet', addresses: csv(`${a},solana,4,someSolanaParentKey`) });
      expectImportError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(res.body.message).to.match(/hd_wallet mode is not available for Solana/).and.match(/self_managed/);
      expect((await orgAddresses(org.organizationId)).length).to.equal(before);
      const ok = await post({ protocol: 'solana', mode: 'self_managed', addresses: csv(`${a},solana,,`) });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expect((await orgAddresses(org.organizationId)).length).to.equal(before + 1);
    });

    it('skips addresses already in the pool or repeated; lists ones another organization holds', async () => {
      const other = await createTestOrg('Import other');
      const theirs = randomEvmAddress();
      expect((await post({ protocol: 'evm', mode: 'self_managed', addresses: csv(`${theirs},evm,,`) }, other.keys.admin)).status).to.equal(200);
      const mine = randomEvmAddress();
      expect((await post({ protocol: 'evm', mode: 'self_managed', addresses: csv(`${mine},evm,,`) })).status).to.equal(200);
      const fresh = randomEvmAddress();
      const res = await post({
        protocol: 'evm',
        mode: 'self_managed',
        addresses: csv(`${mine.toLowerCase()},evm,,`, `${fresh},evm,,`, `${theirs},evm,,`, `${fresh.toLowerCase()},evm,,`),
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const data = style === 'a' ? dataOf('a', res) : res.body;
      expect(data).to.deep.include({ imported: 1, skipped: 3 });
      expect(data.errors).to.deep.equal([{ line: 4, address: theirs, error: "already in another organization's pool; skipped" }]);
      expect((await orgAddresses(org.organizationId)).sort()).to.deep.equal([mine, fresh].sort());
      expect(await orgAddresses(other.organizationId)).to.deep.equal([theirs]);
    });

    it('rejects a wrong header, an empty CSV and unknown body fields', async () => {
      const wrongHeader = await post({ protocol: 'evm', mode: 'self_managed', addresses: `addr,proto\n${randomEvmAddress()},evm` });
      expectImportError(style, wrongHeader, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(wrongHeader.body.details[0]).to.deep.include({ line: 1 });
      expectImportError(style, await post({ protocol: 'evm', mode: 'self_managed', addresses: HEADER + '\n' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectImportError(style, await post({ protocol: 'evm', mode: 'other', addresses: csv() }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectImportError(style, await post({ protocol: 'bitcoin', mode: 'self_managed', addresses: csv() }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(await orgAddresses(org.organizationId)).to.deep.equal([]);
    });

    it('accepts a body far above the default limit (import has its own)', async () => {
      const lines = Array.from({ length: 3000 }, () => `${randomEvmAddress()},evm,,`);
      const body = { protocol: 'evm', mode: 'self_managed', addresses: csv(...lines) };
      expect(JSON.stringify(body).length).to.be.greaterThan(100 * 1024);
      const res = await post(body);
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).to.equal(200);
      expect((style === 'a' ? dataOf('a', res) : res.body).imported).to.equal(3000);
    });

    it('is Admin/Owner only: Member and Viewer get 403', async () => {
      const body = { protocol: 'evm', mode: 'self_managed', addresses: csv(`${randomEvmAddress()},evm,,`) };
      expectError(style, await post(body, org.keys.member), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await post(body, org.keys.viewer), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expect(await orgAddresses(org.organizationId)).to.deep.equal([]);
      expect((await post(body, org.keys.owner)).status).to.equal(200);
    });
  });
}

describe('address pool import: private key material', () => {
  const { app } = buildTestApp({ style: 'b' });
  let org: TestOrg;
  before(async () => {
    org = await createTestOrg('Secrets org');
  });

  const wallet = Wallet.createRandom();
  const xprv = HDNodeWallet.createRandom().extendedKey;
  const mnemonic = Mnemonic.fromEntropy(randomBytes(16)).phrase;
  const mnemonic24 = Mnemonic.fromEntropy(randomBytes(32)).phrase;
  const wifPayload = concat(['0x80', randomBytes(32), '0x01']);
  const wif = encodeBase58(concat([wifPayload, sha256(sha256(wifPayload)).slice(0, 10)]));
  const solanaSecret = encodeBase58(concat(['0x01', randomBytes(63)]));
  const byteArray = `"[${Array.from(randomBytes(64)).join(',')}]"`;

  const key = 'possible private key';
  const seed = 'possible seed phrase';
  const cases: { name: string; secret: string; line: (secret: string) => string; expectLine: number; kind?: string }[] = [
    { name: 'a 0x-prefixed 64-hex private key in the address column', secret: wallet.privateKey, line: (s) => `${s},evm,,`, expectLine: 3 },
    { name: 'a 0X-prefixed (upper-case) private key', secret: wallet.privateKey, line: (s) => `${s.replace('0x', '0X')},evm,,`, expectLine: 3 },
    { name: 'an upper-case private key', secret: wallet.privateKey, line: (s) => `${s.toUpperCase()},evm,,`, expectLine: 3 },
    { name: 'a private key missing its first digit (63 hex)', secret: wallet.privateKey.slice(3), line: (s) => `${s},evm,,`, expectLine: 3 },
    { name: 'a 0x-prefixed private key with one digit too many (65 hex)', secret: wallet.privateKey, line: (s) => `${s}0,evm,,`, expectLine: 3 },
    { name: 'a 66-hex value without prefix', secret: `ab${wallet.privateKey.slice(2)}`, line: (s) => `${s},evm,,`, expectLine: 3 },
    { name: 'a seed phrase as a numbered list, one "1. word" per line', secret: mnemonic, line: (s) => s.split(' ').map((w, i) => `${i + 1}. ${w}`).join('\n'), expectLine: 3, kind: seed },
    { name: 'a seed phrase numbered on one line ("1.word 2.word")', secret: mnemonic, line: (s) => s.split(' ').map((w, i) => `${i + 1}.${w}`).join(' '), expectLine: 3, kind: seed },
    { name: 'a seed phrase numbered "1) word" in one CSV cell', secret: mnemonic24, line: (s) => `"${s.split(' ').map((w, i) => `${i + 1}) ${w}`).join(' ')}"`, expectLine: 3, kind: seed },
    { name: 'a hyphen-joined seed phrase', secret: mnemonic, line: (s) => s.split(' ').join('-'), expectLine: 3, kind: seed },
    { name: 'an upper-case seed phrase in the address column', secret: mnemonic, line: (s) => `${s.toUpperCase()},evm,,`, expectLine: 3, kind: seed },
    { name: 'a bare 64-hex private key in the xpub column', secret: wallet.privateKey.slice(2), line: (s) => `${randomEvmAddress()},evm,1,${s}`, expectLine: 3 },
    { name: 'an xprv as master_public_key', secret: xprv, line: (s) => `${randomEvmAddress()},evm,0,${s}`, expectLine: 3 },
    { name: 'a 12-word mnemonic on its own line', secret: mnemonic, line: (s) => s, expectLine: 3, kind: seed },
    { name: 'a 24-word mnemonic split over columns', secret: mnemonic24, line: (s) => s.split(' ').join(','), expectLine: 3, kind: seed },
    { name: 'a WIF key', secret: wif, line: (s) => `${s},evm,,`, expectLine: 3 },
    { name: 'a Solana 64-byte secret', secret: solanaSecret, line: (s) => `${s},evm,,`, expectLine: 3 },
    { name: 'a Solana keypair byte array', secret: byteArray, line: (s) => `${randomEvmAddress()},evm,,${s}`, expectLine: 3 },
  ];

  for (const c of cases) {
    it(`rejects the whole import for ${c.name}, never storing or logging it`, async () => {
      const before = capturedLogLines.length;
      const good = randomEvmAddress();
      const text = csv(`${good},evm,,`, c.line(c.secret), `${randomEvmAddress()},evm,,`);
      const res = await request(app)
        .post('/api/v1/address-pool/import')
        .set('X-API-Key', org.keys.admin)
        .set('Idempotency-Key', `secret-${randomBytes(4).toString('hex')}`)
        .send({ protocol: 'evm', mode: 'self_managed', addresses: text });
      expectImportError('b', res, 400, 'IMPORT_REJECTED', 'ValidationError');
      expect(res.body.message).to.match(new RegExp(`line ${c.expectLine} of the CSV`));
      expect(res.body.message).to.match(/Nothing was imported/);
      // Only the line and the kind: none of the line's characters.
      expect(res.body.details).to.deep.equal([{ line: c.expectLine, kind: c.kind ?? key, error: c.kind ?? key }]);
      const raw = JSON.stringify(res.body);
      const probe = c.secret.replace(/^0x/, '').replace(/^"\[/, '').slice(0, 24);
      expect(raw).to.not.include(probe);
      expect(raw).to.not.include(good); // nothing of the input is echoed
      // Not stored anywhere: not in the pool, not in the idempotency records, not in any table.
      expect(await orgAddresses(org.organizationId)).to.deep.equal([]);
      const dump = await testSql().unsafe(`select string_agg(t::text, '|') as s from (select * from idempotency_records) t`);
      expect(String(dump[0].s ?? '')).to.not.include(probe);
      const poolDump = await testSql().unsafe(`select string_agg(t::text, '|') as s from (select * from pool_addresses) t`);
      expect(String(poolDump[0].s ?? '')).to.not.include(probe);
      // Not logged: the request was logged (so the capture works) without the secret.
      const logged = capturedLogLines.slice(before).join('');
      expect(logged).to.include('/api/v1/address-pool/import');
      expect(logged).to.not.include(probe);
    });
  }

  it('rolls back blocks already inserted when a later line is invalid (all-or-nothing)', async function () {
    this.timeout(30_000);
    const lines = Array.from({ length: 12_000 }, () => `${randomEvmAddress()},evm,,`);
    lines.push('0xnot-an-address,evm,,');
    const res = await request(app).post('/api/v1/address-pool/import').set('X-API-Key', org.keys.admin).send({ protocol: 'evm', mode: 'self_managed', addresses: csv(...lines) });
    expectImportError('b', res, 400, 'VALIDATION_ERROR', 'ValidationError');
    expect(res.body.details).to.have.length(1);
    expect(res.body.details[0]).to.deep.include({ line: 12_002, address: '0xnot-an-address' });
    expect(await orgAddresses(org.organizationId)).to.deep.equal([]);
  });

  it('refuses more than 100,000 lines, naming the first line over the limit', async function () {
    this.timeout(30_000);
    const line = `${randomEvmAddress()},evm,,`;
    const res = await request(app)
      .post('/api/v1/address-pool/import')
      .set('X-API-Key', org.keys.admin)
      .send({ protocol: 'evm', mode: 'self_managed', addresses: csv(...Array.from({ length: 100_001 }, () => line)) });
    expectImportError('b', res, 400, 'VALIDATION_ERROR', 'ValidationError');
    expect(res.body.message).to.match(/at most 100000 addresses/);
    expect(res.body.details).to.deep.equal([{ line: 100_002, address: '', error: 'more than 100000 addresses' }]);
    expect(await orgAddresses(org.organizationId)).to.deep.equal([]);
  });

  it('rejects an xprv given to derive, without echoing it', async () => {
    const before = capturedLogLines.length;
    const res = await request(app).post('/api/v1/address-pool/derive').set('X-API-Key', org.keys.admin).send({ protocol: 'evm', masterPublicKey: xprv, start: 0, count: 3 });
    expectError('b', res, 400, 'IMPORT_REJECTED', 'ValidationError');
    expect(res.body.message).to.match(/masterPublicKey/);
    expect(JSON.stringify(res.body)).to.not.include(xprv.slice(4, 30));
    expect(capturedLogLines.slice(before).join('')).to.not.include(xprv.slice(4, 30));
    expect(await orgAddresses(org.organizationId)).to.deep.equal([]);
  });

  it('does not mistake ordinary addresses, xpubs and 0x + 40 hex for secrets', async () => {
    const k = freshXpub();
    const lines = Array.from({ length: 50 }, (_, i) => `${k.evm(i)},evm,${i},${k.xpub}`);
    const res = await request(app).post('/api/v1/address-pool/import').set('X-API-Key', org.keys.admin).send({ protocol: 'evm', mode: 'hd_wallet', addresses: csv(...lines) });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.imported).to.equal(50);
  });
});
