import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { addressAssignments, orders, poolAddresses, transfers } from '../../db/schema';
import { resetCheckpointToHead, startTestChain, type TestChain } from '../helpers/anvil';
import { createTestOrg, testContext, testDb, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { eventually } from '../helpers/wait';
import { startHoldingProxy } from '../helpers/holding-proxy';
import { callApi } from '../helpers/api-call';

/**
 * Issue 39, found by the simulation: a gap in the service's looks at the chain's head while the
 * API goes on handing out addresses left the fast payers of the orders made meanwhile
 * `undecidable`, since attribution needs a look at most L before each hand-over.
 *   - Every worker down (a deploy of the job tier): only the workers' jobs looked. The API process
 *     now looks on its own timer (core/detection/head-looks.ts).
 *   - The chain's only provider held (it takes requests and answers none): no process can look.
 *     Where the chain's consensus ties block timestamps to slots, the block's timestamp, measured
 *     against the looks on both sides of the gap, is a second witness
 *     (core/detection/clock-witness.ts; anvil stands in for such a chain here,
 *     CLOCK_WITNESS_SECONDS_ETHEREUM_LOCAL). It decides only blocks at least its margin (here about
 *     6 s) from a hand-over, so these payers pay some seconds after their order and unbind some
 *     seconds after their payment.
 * Here a real API process runs on a local chain during a GAP_MS gap; orders are created and paid
 * during it (never-used addresses, and one whose previous order ended an hour before), and a
 * deposit reference is bound, paid and unbound in it. When the gap ends, every payment is credited
 * to what it was meant for.
 */
const GAP_MS = 60_000;
const UNITS = 1_000_000n;

for (const gap of ['every worker down', 'the only provider held'] as const) {
  describe(`${gap} while the API hands out addresses${gap === 'every worker down' ? ' (a deploy of the job tier)' : ''}`, function () {
    this.timeout(240_000);
    const held = gap === 'the only provider held';
    /** Between an order (or a binding) and its payment, and between the deposit's payment and the unbind. */
    const payDelayMs = held ? 10_000 : 300;
    const unbindDelayMs = held ? 10_000 : 3000;

    let chain: TestChain;
    let org: TestOrg;
    let api: Spawned;
    let worker: Spawned | undefined;
    let proxy: Awaited<ReturnType<typeof startHoldingProxy>> | undefined;
    let base: string;
    let env: Record<string, string>;
    const workerEnv = () => ({ ...env, CHAIN_SCAN_INTERVAL_MS: '200', CONFIRMATIONS_INTERVAL_MS: '200' });

    before(async () => {
      chain = await startTestChain();
      const ctx = testContext();
      org = await createTestOrg(`Gap org ${gap}`);
      await resetCheckpointToHead(ctx, chain);
      proxy = held ? await startHoldingProxy(chain.url) : undefined;
      env = {
        DATABASE_URL: TEST_DATABASE_URL,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: `${TEST_REDIS_PREFIX}gap${held ? 'held' : ''}`,
        NETWORK: 'local',
        LOG_LEVEL: 'info',
        RATE_LIMIT_ENABLED: 'false',
        RPC_URLS_ETHEREUM_LOCAL: proxy?.url ?? chain.url,
        TOKEN_ETHEREUM_LOCAL_USDT: chain.tokens.USDT,
        TOKEN_ETHEREUM_LOCAL_USDC: chain.tokens.USDC,
        TOKEN_ETHEREUM_LOCAL_DAI: chain.tokens.DAI,
        ...(held ? { CLOCK_WITNESS_SECONDS_ETHEREUM_LOCAL: '2' } : {}),
      };
      api = spawnEntry('api/main.ts', { ...env, PORT: '0' });
      base = `http://127.0.0.1:${JSON.parse(await api.waitFor(/API listening/, 60_000)).port}`;
    });

    after(async () => {
      proxy?.release();
      for (const p of [api, worker]) p?.killGroup('SIGKILL');
      await proxy?.close();
      await chain?.stop();
    });

    const call = (method: string, path: string, body?: unknown) => callApi(base, org.keys.admin, method, path, body);

    it('credits the orders created and paid during the gap, and a deposit reference paid and unbound in it, once the gap ends', async () => {
      // An address whose previous order ended an hour ago: its order made through the API, then its
      // history moved back an hour (what the cooldown job leaves once that order's cooldown is over).
      const [recycledAddress] = await seedPoolAddresses(org.organizationId, 'evm', 1, new Date(Date.now() - 3 * 3600_000));
      const old = await call('POST', '/orders', { orderReference: 'gap-old', amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
      expect(old.address).to.equal(recycledAddress);
      const hourAgo = new Date(Date.now() - 3600_000);
      await testDb().update(orders).set({ status: 'expired' }).where(eq(orders.id, old.orderId));
      await testDb()
        .update(addressAssignments)
        .set({ startedAt: new Date(hourAgo.getTime() - 600_000), endedAt: hourAgo })
        .where(eq(addressAssignments.orderId, old.orderId));
      await testDb().update(poolAddresses).set({ status: 'available', recycledAt: hourAgo, cooldownUntil: null }).where(eq(poolAddresses.address, recycledAddress));
      const neverUsed = await seedPoolAddresses(org.organizationId, 'evm', 2);

      worker = spawnEntry('workers/main.ts', workerEnv());
      await worker.waitFor(/workers started/, 60_000);
      // Blocks a second apart while the looks run: what the clock witness measures the chain's clock by.
      for (let i = 0; i < 5; i++) {
        await chain.mine(1);
        await new Promise((r) => setTimeout(r, 1000));
      }
      await eventually(async () => (await lastLookAgeMs()) < 1000, 30_000, 'a look at the chain');
      if (held) proxy!.hold();
      else {
        // From here on only the API process looks at the chain.
        worker.killGroup('SIGTERM');
        await worker.exited;
      }
      const gapStarted = Date.now();
      // Longer than any scan interval or L: whatever was seen is old now.
      await new Promise((r) => setTimeout(r, 5000));

      // Orders made during the gap, each paid payDelayMs later: two never-used addresses, then the recycled one.
      const made: { orderId: string; address: string }[] = [];
      for (const ref of ['gap-1', 'gap-2', 'gap-3']) {
        const o = await call('POST', '/orders', { orderReference: ref, amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
        made.push({ orderId: o.orderId, address: o.address });
      }
      expect(made.map((m) => m.address)).to.deep.equal([...neverUsed, recycledAddress]);
      // A deposit reference bound at the same time.
      const [forDeposit] = await seedPoolAddresses(org.organizationId, 'evm', 1);
      const binding = await call('POST', '/deposits/references', { depositReference: 'gap-customer', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
      expect(binding.address).to.equal(forDeposit);
      await new Promise((r) => setTimeout(r, payDelayMs));
      for (const m of made) await chain.pay(m.address, 'USDT', UNITS);
      // The deposit's payment, and the reference unbound unbindDelayMs after it.
      const deposit = await chain.pay(binding.address, 'USDT', UNITS);
      await new Promise((r) => setTimeout(r, unbindDelayMs));
      await call('DELETE', '/deposits/references/gap-customer');

      // Blocks go on during the gap; at its end the worker returns or the provider answers again.
      while (Date.now() - gapStarted < GAP_MS) {
        await chain.mine(1);
        await new Promise((r) => setTimeout(r, 1000));
      }
      if (held) proxy!.release();
      else {
        expect(worker.child.exitCode).to.not.equal(null);
        worker = spawnEntry('workers/main.ts', workerEnv());
        await worker.waitFor(/workers started/, 60_000);
      }
      await chain.mine(5);

      await eventually(
        async () => {
          const rows = await testDb().select({ id: orders.id, status: orders.status }).from(orders).where(eq(orders.organizationId, org.organizationId));
          return made.every((m) => rows.find((r) => r.id === m.orderId)?.status === 'completed');
        },
        60_000,
        'every order paid during the gap completed',
        250,
      );
      const recorded = await testDb()
        .select({ orderId: transfers.orderId, depositBindingId: transfers.depositBindingId, reason: transfers.unattributedReason, toAddress: transfers.toAddress, txHash: transfers.txHash, clockMinedAfter: transfers.clockMinedAfter })
        .from(transfers)
        .where(eq(transfers.organizationId, org.organizationId));
      for (const m of made) {
        expect(recorded.filter((t) => t.toAddress === m.address).map((t) => t.orderId), m.address).to.deep.equal([m.orderId]);
      }
      const toDeposit = recorded.filter((t) => t.txHash === deposit.txHash);
      expect(toDeposit, JSON.stringify(recorded)).to.have.length(1);
      expect(toDeposit[0].depositBindingId, JSON.stringify(toDeposit)).to.equal(binding.bindingId ?? (await bindingIdOf(binding.address)));
      expect(recorded.filter((t) => t.reason !== null), JSON.stringify(recorded)).to.deep.equal([]);
      // Held: no look could place these blocks; the clock witness did (off when only the workers were down).
      expect(recorded.every((t) => (t.clockMinedAfter !== null) === held), JSON.stringify(recorded)).to.equal(true);
    });

    /** How long ago the newest look at the local chain's head left. */
    async function lastLookAgeMs(): Promise<number> {
      const rows = (await testDb().execute(sql`select max(last_seen_at) as at from chain_head_observations where chain_id = ${LOCAL_CHAIN_ID}`)) as unknown as { at: string | Date | null }[];
      return rows[0]?.at == null ? Infinity : Date.now() - new Date(rows[0].at).getTime();
    }

    async function bindingIdOf(address: string): Promise<string | null> {
      const rows = await testDb()
        .select({ id: addressAssignments.depositBindingId })
        .from(addressAssignments)
        .innerJoin(poolAddresses, eq(poolAddresses.id, addressAssignments.poolAddressId))
        .where(and(eq(poolAddresses.address, address), eq(addressAssignments.kind, 'deposit')));
      return rows[0]?.id ?? null;
    }
  });
}
