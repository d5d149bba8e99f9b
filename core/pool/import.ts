import { and, eq, max, sql } from 'drizzle-orm';
import { poolAddresses } from '../../db/schema';
import type { Database, Tx } from '../../db/client';
import type { Protocol } from '../chains/registry';
import { AppError } from '../platform/errors';
import { checkAddress } from '../chains/addresses';
import { DeriverCache, ExtendedKeyError, MAX_DERIVATION_INDEX, XpubDeriver, type DerivableProtocol } from './hd';
import { findSecretInValues } from './secret-scan';

/**
 * Importing addresses into an organization's pool (issue 3): every line is validated first; one
 * invalid line rejects the whole import (all-or-nothing); anything resembling a private key or a
 * mnemonic rejects it without echoing the text. Valid imports are inserted in bulk in one
 * transaction.
 */

export type ImportMode = 'hd_wallet' | 'self_managed';
export type PoolMode = ImportMode | 'derived';

export const MAX_IMPORT_LINES = 100_000;
export const MAX_DERIVE_COUNT = 10_000;
/** How many line errors a 400 answer lists (the message gives the total). */
const MAX_LISTED_LINE_ERRORS = 1000;
const INSERT_CHUNK = 10_000;
const HEADER = ['address', 'protocol', 'derivation_index', 'master_public_key'] as const;

export interface LineError {
  line: number;
  address: string;
  error: string;
}

export interface ImportSummary {
  protocol: Protocol;
  mode: PoolMode;
  derivation_range: { start: number; end: number } | null;
  master_public_key: string | null;
  /** Set when the lines name more than one extended public key. */
  master_public_keys?: string[];
  /** Whether each address was checked against its master public key. */
  verified: boolean;
  note?: string;
}

export interface ImportResult {
  imported: number;
  skipped: number;
  /** Non-fatal: addresses skipped because another organization holds them. */
  errors: LineError[];
  summary: ImportSummary;
}

interface ValidLine {
  line: number;
  address: string;
  derivationIndex: number | null;
  masterPublicKey: string | null;
}

/** Rejects the request when any value looks like key material; never echoes it. */
export function assertNoSecrets(values: Record<string, string | undefined>): void {
  const found = findSecretInValues(values);
  if (!found) return;
  const where = found.field === 'addresses' ? `line ${found.line} of the CSV` : `field ${found.field}`;
  throw new AppError(
    'IMPORT_REJECTED',
    `Rejected: ${where} is a ${found.kind}. Private keys and seed phrases are never accepted; import addresses (and, for hd_wallet, the extended public key) only. Nothing was imported.`,
    // Only where and what: none of the line's characters (four letters identify a BIP-39 word).
    [{ ...(found.field === 'addresses' ? { line: found.line } : { field: found.field }), kind: found.kind, error: found.kind }],
  );
}

/** Splits one CSV line (RFC 4180 quoting, no embedded newlines). */
function splitCsvLine(line: string): string[] | null {
  if (!line.includes('"')) return line.split(',');
  const out: string[] = [];
  let i = 0;
  while (i <= line.length) {
    if (line[i] === '"') {
      let value = '';
      i++;
      for (;;) {
        if (i >= line.length) return null; // unterminated quote
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            value += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += line[i++];
      }
      out.push(value);
      if (i < line.length && line[i] !== ',') return null;
      i++;
    } else {
      const next = line.indexOf(',', i);
      const end = next === -1 ? line.length : next;
      out.push(line.slice(i, end));
      i = end + 1;
    }
  }
  return out;
}

const shown = (text: string) => (text.length > 100 ? `${text.slice(0, 100)}…` : text);

/**
 * Parses and validates the CSV text in steps (so validation of the next lines overlaps the
 * database inserting the previous ones). Errors accumulate; `finish` throws 400 listing every
 * invalid line. Header problems and too many lines throw at once.
 */
export class CsvImportValidator {
  readonly errors: LineError[] = [];
  validCount = 0;
  private readonly lines: string[];
  private readonly columns: Map<string, number>;
  private readonly columnCount: number;
  private readonly derivers = new DeriverCache();
  private readonly protocol: Protocol;
  private readonly mode: ImportMode;
  private cursor: number;

  constructor(input: { protocol: Protocol; mode: ImportMode; csv: string }) {
    this.protocol = input.protocol;
    this.mode = input.mode;
    if (input.protocol === 'solana' && input.mode === 'hd_wallet') {
      throw new AppError(
        'VALIDATION_ERROR',
        'hd_wallet mode is not available for Solana: Solana keys are ed25519, whose derivation is hardened only, so an address cannot be verified against an extended public key. Import Solana addresses with mode self_managed.',
        [],
      );
    }
    const lines = (this.lines = input.csv.split(/\r\n|\n|\r/));
    const headerIndex = lines.findIndex((l) => l.trim() !== '');
    if (headerIndex === -1) throw new AppError('VALIDATION_ERROR', 'The CSV is empty: expected the header address,protocol,derivation_index,master_public_key and one line per address', []);
    const header = (splitCsvLine(lines[headerIndex].replace(/^\uFEFF/, '')) ?? []).map((h) => h.trim().toLowerCase());
    const columns = (this.columns = new Map(header.map((h, i) => [h, i])));
    this.columnCount = header.length;
    const headerProblems: string[] = [];
    for (const h of header) if (!(HEADER as readonly string[]).includes(h)) headerProblems.push(`unknown column "${shown(h)}"`);
    for (const required of ['address', 'protocol']) if (!columns.has(required)) headerProblems.push(`missing column "${required}"`);
    if (columns.size !== header.length) headerProblems.push('a column is repeated');
    if (headerProblems.length > 0) {
      throw new AppError('VALIDATION_ERROR', `Invalid CSV header (expected address,protocol,derivation_index,master_public_key): ${headerProblems.join('; ')}`, [
        { line: headerIndex + 1, address: '', error: `invalid header: ${headerProblems.join('; ')}` },
      ]);
    }
    let dataLines = 0;
    for (let i = headerIndex + 1; i < lines.length; i++) {
      if (lines[i].trim() === '') continue;
      if (++dataLines > MAX_IMPORT_LINES) {
        throw new AppError('VALIDATION_ERROR', `Too many lines: at most ${MAX_IMPORT_LINES} addresses per import; split the file`, [
          { line: i + 1, address: '', error: `more than ${MAX_IMPORT_LINES} addresses` },
        ]);
      }
    }
    this.cursor = headerIndex + 1;
  }

  get done(): boolean {
    return this.cursor >= this.lines.length;
  }

  private col(fields: string[], name: string): string {
    const i = this.columns.get(name);
    return i === undefined ? '' : (fields[i] ?? '').trim();
  }

  /** Validates up to `maxLines` more data lines; returns the valid ones among them. */
  next(maxLines: number): ValidLine[] {
    const valid: ValidLine[] = [];
    let seen = 0;
    const lines = this.lines;
    for (; this.cursor < lines.length && seen < maxLines; this.cursor++) {
      const i = this.cursor;
      seen++;
      const raw = lines[i];
      if (raw.trim() === '') continue;
      const lineNo = i + 1;
      const fields = splitCsvLine(raw);
      if (!fields) {
        this.errors.push({ line: lineNo, address: shown(raw.trim()), error: 'malformed CSV line (unterminated quote)' });
        continue;
      }
      const addressText = this.col(fields, 'address');
      const fail = (error: string) => this.errors.push({ line: lineNo, address: shown(addressText), error });
      if (fields.length > this.columnCount) {
        fail(`expected at most ${this.columnCount} columns, got ${fields.length}`);
        continue;
      }
      if (addressText === '') {
        fail('address is empty');
        continue;
      }
      const lineProtocol = this.col(fields, 'protocol').toLowerCase();
      if (lineProtocol !== this.protocol) {
        fail(lineProtocol === '' ? `protocol is empty (expected ${this.protocol})` : `protocol "${shown(lineProtocol)}" does not match the import's protocol "${this.protocol}"`);
        continue;
      }
      const checked = checkAddress(this.protocol, addressText);
      if (!checked.ok) {
        fail(checked.error);
        continue;
      }
      const indexText = this.col(fields, 'derivation_index');
      const xpub = this.col(fields, 'master_public_key');
      if (this.mode === 'self_managed') {
        if (indexText !== '' || xpub !== '') {
          fail('derivation_index and master_public_key must be empty in self_managed mode (use mode hd_wallet)');
          continue;
        }
        valid.push({ line: lineNo, address: checked.address, derivationIndex: null, masterPublicKey: null });
        continue;
      }
      // hd_wallet
      if (!/^\d{1,10}$/.test(indexText) || Number(indexText) > MAX_DERIVATION_INDEX) {
        fail(indexText === '' ? 'derivation_index is required in hd_wallet mode' : `derivation_index must be an integer from 0 to ${MAX_DERIVATION_INDEX}`);
        continue;
      }
      const index = Number(indexText);
      if (xpub === '') {
        fail('master_public_key is required in hd_wallet mode');
        continue;
      }
      const deriver = this.derivers.get(xpub);
      if (deriver instanceof ExtendedKeyError) {
        fail(`master_public_key is ${deriver.message}`);
        continue;
      }
      const expected = deriver.address(this.protocol as DerivableProtocol, index);
      if (expected !== checked.address) {
        fail(`address does not derive from master_public_key at 0/${index} (expected ${expected})`);
        continue;
      }
      valid.push({ line: lineNo, address: checked.address, derivationIndex: index, masterPublicKey: xpub });
    }
    this.validCount += valid.length;
    return valid;
  }

  /** Throws 400 when any line was invalid or there was no address at all. */
  finish(): void {
    const errors = this.errors;
    if (errors.length > 0) {
      const listed = errors.slice(0, MAX_LISTED_LINE_ERRORS);
      throw new AppError(
        'VALIDATION_ERROR',
        `${errors.length} invalid line${errors.length === 1 ? '' : 's'}${errors.length > listed.length ? ` (first ${listed.length} listed)` : ''}; nothing was imported`,
        listed,
      );
    }
    if (this.validCount === 0) {
      throw new AppError('VALIDATION_ERROR', 'The CSV has a header but no addresses', []);
    }
  }
}

/** Validates the whole CSV at once: the valid lines, or 400 listing every invalid one. */
export function validateImportCsv(input: { protocol: Protocol; mode: ImportMode; csv: string }): ValidLine[] {
  const validator = new CsvImportValidator(input);
  const valid: ValidLine[] = [];
  while (!validator.done) for (const l of validator.next(10_000)) valid.push(l);
  validator.finish();
  return valid;
}

function summaryOf(protocol: Protocol, mode: PoolMode, lines: ValidLine[]): ImportSummary {
  if (mode === 'self_managed') {
    return { protocol, mode, derivation_range: null, master_public_key: null, verified: false };
  }
  let start = Infinity;
  let end = -Infinity;
  const keys = new Set<string>();
  for (const l of lines) {
    if (l.derivationIndex !== null) {
      start = Math.min(start, l.derivationIndex);
      end = Math.max(end, l.derivationIndex);
    }
    if (l.masterPublicKey) keys.add(l.masterPublicKey);
  }
  const summary: ImportSummary = {
    protocol,
    mode,
    derivation_range: Number.isFinite(start) ? { start, end } : null,
    master_public_key: keys.size === 1 ? [...keys][0] : null,
    verified: true,
  };
  if (keys.size > 1) summary.master_public_keys = [...keys];
  return summary;
}

/**
 * Inserts validated lines inside the caller's transaction, chunk by chunk: new addresses become
 * available; ones already in this organization's pool, or repeated in the input, are skipped;
 * ones another organization holds are skipped and reported (non-fatal).
 */
class PoolInserter {
  private readonly seen = new Set<string>();
  private readonly notInserted: ValidLine[] = [];
  private lineCount = 0;
  private imported = 0;

  constructor(private readonly tx: Tx, private readonly input: { organizationId: string; protocol: Protocol; mode: PoolMode; now: Date }) {}

  async add(lines: ValidLine[]): Promise<void> {
    this.lineCount += lines.length;
    const unique: ValidLine[] = [];
    for (const l of lines) {
      if (this.seen.has(l.address)) continue; // repeated in the input: the first line wins
      this.seen.add(l.address);
      unique.push(l);
    }
    const now = this.input.now.toISOString();
    for (let i = 0; i < unique.length; i += INSERT_CHUNK) {
      const part = unique.slice(i, i + INSERT_CHUNK);
      const json = JSON.stringify(part.map((l, j) => ({ a: l.address, d: l.derivationIndex, m: l.masterPublicKey, o: j })));
      const rows = await this.tx.execute<{ address: string }>(sql`
        insert into pool_addresses (organization_id, protocol, address, mode, derivation_index, master_public_key, status, created_at, updated_at)
        select ${this.input.organizationId}, ${this.input.protocol}, r.a, ${this.input.mode}, r.d, r.m, 'available', ${now}::timestamptz, ${now}::timestamptz
        from json_to_recordset(${json}::json) as r(a text, d integer, m text, o integer)
        order by r.o
        on conflict (protocol, address) do nothing
        returning address`);
      this.imported += rows.length;
      if (rows.length < part.length) {
        const inserted = new Set(rows.map((r) => r.address));
        for (const l of part) if (!inserted.has(l.address)) this.notInserted.push(l);
      }
    }
  }

  async finish(): Promise<{ imported: number; skipped: number; errors: LineError[] }> {
    const errors: LineError[] = [];
    const foreign = new Set<string>();
    for (let i = 0; i < this.notInserted.length; i += INSERT_CHUNK) {
      const chunk = this.notInserted.slice(i, i + INSERT_CHUNK).map((l) => l.address);
      const rows = await this.tx.execute<{ address: string }>(sql`
        select address from pool_addresses
        where protocol = ${this.input.protocol}
          and address in (select json_array_elements_text(${JSON.stringify(chunk)}::json))
          and organization_id <> ${this.input.organizationId}`);
      for (const r of rows) foreign.add(r.address);
    }
    for (const l of this.notInserted) {
      if (foreign.has(l.address)) errors.push({ line: l.line, address: l.address, error: "already in another organization's pool; skipped" });
    }
    return { imported: this.imported, skipped: this.lineCount - this.imported, errors };
  }
}

/**
 * POST /address-pool/import. Validation of each block of lines overlaps the insert of the
 * previous block (one transaction); any invalid line rolls everything back.
 */
export async function importPoolAddresses(
  db: Database,
  input: { organizationId: string; protocol: Protocol; mode: ImportMode; csv: string; now: Date },
): Promise<ImportResult> {
  assertNoSecrets({ addresses: input.csv });
  const validator = new CsvImportValidator(input);
  const all: ValidLine[] = [];
  const outcome = await db.transaction(async (tx) => {
    const inserter = new PoolInserter(tx, input);
    let pending: Promise<void> = Promise.resolve();
    while (!validator.done) {
      const valid = validator.next(INSERT_CHUNK);
      for (const l of valid) all.push(l);
      if (validator.errors.length > 0) continue; // keep validating to list every invalid line
      await pending;
      pending = inserter.add(valid);
      pending.catch(() => {}); // awaited below; avoid an unhandled rejection meanwhile
      await new Promise((resolve) => setImmediate(resolve)); // let the insert go out first
    }
    await pending;
    validator.finish(); // throws on any invalid line: the transaction rolls back
    return inserter.finish();
  });
  await refreshPoolStatisticsAfter(db, outcome.imported);
  return { ...outcome, summary: summaryOf(input.protocol, input.mode, all) };
}

/** Imports this large change the pool enough that the planner needs fresh statistics. */
const ANALYZE_AFTER_IMPORTED = 10_000;

/**
 * Without statistics on a freshly filled pool the planner sorts the whole pool for every
 * allocation (tens of ms) until autovacuum gets to it; a large import refreshes them at once.
 */
async function refreshPoolStatisticsAfter(db: Database, imported: number): Promise<void> {
  if (imported >= ANALYZE_AFTER_IMPORTED) await db.execute(sql`analyze pool_addresses`);
}

/** The first index after the organization's addresses derived from this key (0 when none). */
export async function nextDerivationIndex(db: Database, input: { organizationId: string; protocol: DerivableProtocol; masterPublicKey: string }): Promise<number> {
  const [row] = await db
    .select({ last: max(poolAddresses.derivationIndex) })
    .from(poolAddresses)
    .where(and(eq(poolAddresses.organizationId, input.organizationId), eq(poolAddresses.protocol, input.protocol), eq(poolAddresses.masterPublicKey, input.masterPublicKey)));
  return row?.last === null || row?.last === undefined ? 0 : row.last + 1;
}

/**
 * Beyond the spec: adds watch-only addresses derived from an extended public key at
 * `0/start` … `0/(start+count-1)`. No private key is involved.
 */
export async function derivePoolAddresses(
  db: Database,
  input: { organizationId: string; protocol: DerivableProtocol; masterPublicKey: string; start: number; count: number; now: Date },
): Promise<ImportResult> {
  assertNoSecrets({ masterPublicKey: input.masterPublicKey });
  if (!Number.isInteger(input.count) || input.count < 1 || input.count > MAX_DERIVE_COUNT) {
    throw new AppError('VALIDATION_ERROR', `count must be from 1 to ${MAX_DERIVE_COUNT}`, [{ field: 'count', message: `must be from 1 to ${MAX_DERIVE_COUNT}` }]);
  }
  if (input.start + input.count - 1 > MAX_DERIVATION_INDEX) {
    throw new AppError('VALIDATION_ERROR', `start + count - 1 must not exceed ${MAX_DERIVATION_INDEX} (non-hardened indexes)`, [{ field: 'start', message: 'range exceeds non-hardened indexes' }]);
  }
  let deriver: XpubDeriver;
  try {
    deriver = new XpubDeriver(input.masterPublicKey);
  } catch (err) {
    const reason = err instanceof ExtendedKeyError ? err.message : 'not a valid extended public key (xpub)';
    throw new AppError('VALIDATION_ERROR', `masterPublicKey is ${reason}`, [{ field: 'masterPublicKey', message: `is ${reason}` }]);
  }
  const lines: ValidLine[] = [];
  for (let i = 0; i < input.count; i++) {
    const index = input.start + i;
    lines.push({ line: i + 1, address: deriver.address(input.protocol, index), derivationIndex: index, masterPublicKey: input.masterPublicKey });
  }
  const outcome = await db.transaction(async (tx) => {
    const inserter = new PoolInserter(tx, { organizationId: input.organizationId, protocol: input.protocol, mode: 'derived', now: input.now });
    await inserter.add(lines);
    return inserter.finish();
  });
  await refreshPoolStatisticsAfter(db, outcome.imported);
  return {
    ...outcome,
    summary: {
      protocol: input.protocol,
      mode: 'derived',
      derivation_range: { start: input.start, end: input.start + input.count - 1 },
      master_public_key: input.masterPublicKey,
      verified: true,
    },
  };
}
