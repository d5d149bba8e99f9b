import { expect } from 'chai';
import { eq, sql } from 'drizzle-orm';
import { organizationConfig } from '../../db/schema';
import { getConfigValue, setConfigValue } from '../../core/organizations/org-config';
import { createTestOrg, testDb } from '../helpers/harness';

/**
 * patches/drizzle-orm+0.45.4.patch (drizzle-orm #3018, #5485): postgres.js parses json/jsonb
 * itself, and drizzle's jsonb column parsed a string value a second time, so a stored "0.05"
 * came back as the number 0.05 and "1e-18"-sized decimals lost their digits. Fails on the
 * unpatched driver.
 */
describe('jsonb values read back as stored (drizzle patch)', () => {
  it('a JSON string that looks like a number stays a string; objects, numbers and null stay what they were', async () => {
    const org = await createTestOrg('jsonb values');
    await setConfigValue(testDb(), org.organizationId, 'underpayment_tolerance.amount', '0.000000000000000001');
    expect(await getConfigValue(testDb(), org.organizationId, 'underpayment_tolerance.amount')).to.equal('0.000000000000000001');
    await setConfigValue(testDb(), org.organizationId, 'underpayment_tolerance.percent', '0.5');
    expect(await getConfigValue(testDb(), org.organizationId, 'underpayment_tolerance.percent')).to.equal('0.5');
    const [stored] = await testDb().execute<{ t: string }>(
      sql`select jsonb_typeof(value) as t from organization_config where organization_id = ${org.organizationId} and key = 'underpayment_tolerance.percent'`,
    );
    expect(stored.t).to.equal('string');
    await setConfigValue(testDb(), org.organizationId, 'payment_window_minutes', 15);
    expect(await getConfigValue(testDb(), org.organizationId, 'payment_window_minutes')).to.equal(15);
    await testDb()
      .insert(organizationConfig)
      .values({ organizationId: org.organizationId, key: 'x.object', value: { a: ['1', 2, null] } as never, updatedAt: new Date() });
    const [row] = await testDb().select().from(organizationConfig).where(eq(organizationConfig.key, 'x.object'));
    expect(row.value).to.deep.equal({ a: ['1', 2, null] });
    await testDb().delete(organizationConfig).where(eq(organizationConfig.key, 'x.object'));
  });
});
