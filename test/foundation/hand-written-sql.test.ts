import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { handWrittenStatements } from '../../db/client';
// The modules that define the product's hand-written statements (registered when loaded).
import '../../core/events/events';
import '../../core/platform/listener';
import '../../core/webhooks/claim';
import '../../core/webhooks/apply';
import '../../core/alerts/alert-emails';
import '../../core/detection/scan';
import '../../core/detection/attribution';
import '../../core/orders/orders';
import '../../core/orders/payment-page';
import '../../core/pool/allocation';
import '../../core/organizations/organizations';

/**
 * Snapshots of the hand-written statements' texts, as sent to Postgres (one .sql file each, named
 * after the statement, with what each $n stands for). A change to one shows up here for review: allocation order, locking and
 * index use live in these texts. After a deliberate change: UPDATE_SQL_SNAPSHOTS=1 and review the
 * diff. Statements that tests define (names starting `test.`) are not snapshotted.
 */
const SNAPSHOT_DIR = path.join(__dirname, 'hand-written-sql');
const ROOT = path.resolve(__dirname, '..', '..');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

/**
 * Statements built once per batch size (orders.create_<size>_with_addresses, core/orders/orders.ts)
 * differ only in their limits: the family has one snapshot, orders.create_n_with_addresses, with
 * `<n>` for the size, and every size must match it.
 */
const SIZED = /^(orders\.create_)(\d+)(_with_addresses)$/;

function snapshotOf(name: string, text: string): { name: string; text: string } {
  const sized = SIZED.exec(name);
  if (!sized) return { name, text };
  return { name: `${sized[1]}n${sized[3]}`, text: text.replace(new RegExp(`\\blimit ${sized[2]}\\b`, 'g'), 'limit <n>') };
}

describe('hand-written SQL statements', () => {
  const product = () =>
    [...handWrittenStatements()]
      .filter(([name]) => !name.startsWith('test.'))
      .map(([name, statement]) => [snapshotOf(name, statement.text).name, { ...statement, text: snapshotOf(name, statement.text).text }] as const);

  it('run through db/client.ts alone: no other module reaches below drizzle\'s query API', () => {
    const below = /\b_\.session\b|mapFromDriverValue/;
    const offenders = ['api', 'core', 'db', 'workers', 'scripts']
      .flatMap((dir) => sourceFiles(path.join(ROOT, dir)))
      .filter((file) => file !== path.join(ROOT, 'db', 'client.ts') && below.test(fs.readFileSync(file, 'utf8')))
      .map((file) => path.relative(ROOT, file));
    expect(offenders).to.deep.equal([]);
  });

  it('are the expected set: one snapshot per statement, none stale', () => {
    const snapshots = fs.readdirSync(SNAPSHOT_DIR).filter((f) => f.endsWith('.sql')).map((f) => f.slice(0, -4)).sort();
    const names = [...new Set(product().map(([name]) => name))].sort();
    if (process.env.UPDATE_SQL_SNAPSHOTS) {
      for (const stale of snapshots.filter((s) => !names.includes(s))) fs.rmSync(path.join(SNAPSHOT_DIR, `${stale}.sql`));
      return;
    }
    expect(names).to.deep.equal(snapshots);
    expect(names).to.include.members(['orders.create_with_address', 'orders.create_n_with_addresses', 'pool.take_for_deposit', 'pool.take_for_order']);
  });

  it('have the snapshotted texts', () => {
    for (const [name, { text, parameters }] of product()) {
      const file = path.join(SNAPSHOT_DIR, `${name}.sql`);
      const legend = parameters.map((p, i) => `-- $${i + 1}: ${'placeholder' in p ? p.placeholder : `fixed ${JSON.stringify(p.value)}`}`);
      const expected = `${text.trim()}\n\n${legend.join('\n')}\n`;
      if (process.env.UPDATE_SQL_SNAPSHOTS) fs.writeFileSync(file, expected);
      expect(fs.readFileSync(file, 'utf8'), `${name} changed: review it, then UPDATE_SQL_SNAPSHOTS=1`).to.equal(expected);
    }
  });
});
