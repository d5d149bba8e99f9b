import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { bindEachPlaceholderOnce, prepareStatement } from '../../db/client';
import { testDb } from '../helpers/harness';

describe('prepared statements', () => {
  it('bind a placeholder used several times once, and run with each use filled', async () => {
    const twice = sql`select ${sql.placeholder('n')}::int + ${sql.placeholder('n')}::int as sum, ${sql.placeholder('label')}::text as label, ${'fixed'}::text as fixed`;
    const bound = bindEachPlaceholderOnce({ sql: 'select $1::int + $2::int as sum, $3::text as label, $4::text as fixed', params: [sql.placeholder('n'), sql.placeholder('n'), sql.placeholder('label'), 'fixed'] });
    expect(bound.text).to.equal('select $1::int + $1::int as sum, $2::text as label, $3::text as fixed');
    expect(bound.params).to.have.length(3);

    const statement = prepareStatement<{ n: number; label: string }>('test.placeholder_used_twice', twice);
    for (const n of [2, 21]) {
      const [row] = await statement.run<{ sum: number; label: string; fixed: string }>(testDb(), { n, label: `l${n}` });
      expect(row).to.deep.equal({ sum: 2 * n, label: `l${n}`, fixed: 'fixed' });
    }
  });

  it('refuse a text whose $ markers do not match its parameters, rather than renumber a literal', () => {
    expect(() => bindEachPlaceholderOnce({ sql: "select $1::text, '$2'", params: [sql.placeholder('a')] })).to.throw(
      'Statement has 2 parameter markers for 1 parameters',
    );
  });
});
