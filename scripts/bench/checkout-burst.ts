/**
 * bench:checkout-burst — a flash sale on one payment link: BENCH_BURST (80) checkout posts of the
 * same link at once, each from a client IP of its own (X-Forwarded-For through a trusted proxy),
 * against the service started in this process on a database and Redis prefix of the run's own.
 * The link has inventory for every post and the pool far more addresses than the reserve, so every
 * refusal is the service's own ("busy"). Prints, per round (BENCH_ROUNDS, 3), the share of busy
 * answers (503), of orders made (303), and the latency p50/p99 of the burst's posts; then checks
 * the link's counters against the orders made (never oversold).
 *
 *   npm run bench:checkout-burst
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { getAddress, hexlify } from 'ethers';
import { createLogger } from '../../core/platform/logger';
import { createOrganization } from '../../core/organizations/organizations';
import { createPaymentLink, publishPaymentLink } from '../../core/payment-links/links';
import { createService } from '../../core/service/service';
import { startApi } from '../../api/server';
import { paymentLinks, poolAddresses } from '../../db/schema';
import { benchState, localBenchConfig, percentile, runBench } from './bench-kit';

const BURST = Number(process.env.BENCH_BURST ?? 80);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POOL = Number(process.env.BENCH_POOL ?? 2000);
const PUBLIC = 'https://pay.example.com';

const randomAddress = () => getAddress(hexlify(randomBytes(20)));

async function main(): Promise<void> {
  const state = benchState('checkout');
  const config = localBenchConfig(state, {
    PUBLIC_BASE_URL: PUBLIC,
    TRUST_PROXY: 'loopback',
    // The per-IP budget stays the default (10 an hour; each post has an IP of its own); the
    // per-link budget is raised so that a refusal here can only be the service's own.
    CHECKOUT_ORDERS_PER_LINK_PER_MINUTE: '100000000',
    PAGE_RATE_LIMIT_PER_MINUTE: '100000000',
  });
  const { ctx, dbHandle } = await createService(config, { logger: createLogger('silent'), kind: 'api' });
  let api: Awaited<ReturnType<typeof startApi>> | null = null;
  try {
    const { organizationId } = await createOrganization(ctx.db, 'Flash Sale Shop');
    for (let i = 0; i < POOL; i += 1000) {
      await ctx.db.insert(poolAddresses).values(
        Array.from({ length: Math.min(1000, POOL - i) }, (_, j) => ({
          organizationId, protocol: 'evm' as const, address: randomAddress(), mode: 'self_managed' as const, status: 'available' as const,
          createdAt: new Date(Date.now() - 60_000 + i + j),
        })),
      );
    }
    await dbHandle.sql`analyze`;
    api = await startApi(ctx);
    const base = `http://127.0.0.1:${api.port}`;
    process.stdout.write(
      `bench:checkout-burst — ${BURST} concurrent checkouts of one link, ${ROUNDS} rounds, pool ${POOL} (${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})\n`,
    );

    let ipBlock = 0;
    const totals = { busy: 0, created: 0, other: 0, latencies: [] as number[] };
    for (let round = 0; round <= ROUNDS; round++) {
      const link = await publishPaymentLink(ctx, organizationId, (await createPaymentLink(ctx, organizationId, {
        title: `Drop ${round}`, amount: '5', currencies: [{ currency: 'USDT', chainId: 'ethereum-local' }], inventoryTotal: BURST * 2,
      })).id);
      const block = ipBlock++;
      const results = await Promise.all(
        Array.from({ length: BURST }, async (_, i) => {
          const started = performance.now();
          const res = await fetch(`${base}/l/${link.slug}/orders`, {
            method: 'POST',
            redirect: 'manual',
            headers: { 'content-type': 'application/x-www-form-urlencoded', origin: PUBLIC, 'x-forwarded-for': `10.${block}.${i >> 8}.${i & 255}` },
            body: 'choice=USDT%40ethereum-local',
          });
          await res.arrayBuffer();
          return { status: res.status, ms: performance.now() - started };
        }),
      );
      const [row] = await ctx.db.select().from(paymentLinks).where(eq(paymentLinks.id, link.id));
      const created = results.filter((r) => r.status === 303).length;
      const busy = results.filter((r) => r.status === 503).length;
      const other = BURST - created - busy;
      if (row.inventoryReserved + row.inventorySold !== created) {
        throw new Error(`link ${link.id}: ${row.inventoryReserved} units reserved for ${created} orders made`);
      }
      const sorted = results.map((r) => r.ms).sort((a, b) => a - b);
      const name = round === 0 ? 'warm-up' : `round ${round}`;
      process.stdout.write(
        `${name.padEnd(8)}  created ${String(created).padStart(3)}  busy ${String(busy).padStart(3)} (${((busy / BURST) * 100).toFixed(0)} %)  other ${other}  p50 ${percentile(sorted, 50).toFixed(0)} ms  p99 ${percentile(sorted, 99).toFixed(0)} ms\n`,
      );
      if (round === 0) continue;
      totals.busy += busy;
      totals.created += created;
      totals.other += other;
      totals.latencies.push(...sorted);
    }
    const all = totals.latencies.sort((a, b) => a - b);
    const posts = BURST * ROUNDS;
    process.stdout.write(
      `all rounds: ${posts} posts  created ${totals.created} (${((totals.created / posts) * 100).toFixed(0)} %)  busy ${totals.busy} (${((totals.busy / posts) * 100).toFixed(0)} %)  other ${totals.other}  p50 ${percentile(all, 50).toFixed(0)} ms  p99 ${percentile(all, 99).toFixed(0)} ms\n`,
    );
  } finally {
    await api?.close().catch(() => {});
    await dbHandle.close();
    await state.remove();
  }
}

runBench(main);
