import { sql } from 'drizzle-orm';
import { Gauge, Registry } from 'prom-client';
import type { ServiceContext } from '../service/context';
import { METRIC_PREFIX } from '../platform/metrics';

/** What a queue tells about its jobs (BullMQ's Queue#getJobCounts). */
export interface CountableQueue {
  name: string;
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
}

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/**
 * Gauges read at scrape time from where the truth lives, so every process reports the same
 * current values whatever it ran: queue depths from Redis, chain checkpoints and pool
 * availability from Postgres. A registry of their own, served beside the process's counters.
 */
export function scrapeTimeRegistry(ctx: ServiceContext, queues: CountableQueue[]): Registry {
  const registry = new Registry();
  const registers = [registry];

  new Gauge({
    name: `${METRIC_PREFIX}queue_jobs`,
    help: 'BullMQ jobs per queue and state (waiting, active, delayed, failed)',
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      this.reset();
      await Promise.all(
        queues.map(async (q) => {
          const counts = await q.getJobCounts(...QUEUE_STATES);
          for (const state of QUEUE_STATES) this.set({ queue: q.name, state }, counts[state] ?? 0);
        }),
      );
    },
  });

  const checkpoints = async () =>
    (await ctx.db.execute(sql`select chain_id, block_number, block_timestamp, head_number from chain_checkpoints`)) as unknown as {
      chain_id: string;
      block_number: number | string;
      block_timestamp: Date | string;
      head_number: number | string | null;
    }[];
  // The head is the fleet's (the highest any scan stored), not this process's: a process that did
  // not run the last scan would otherwise export the head it saw long ago.
  new Gauge({
    name: `${METRIC_PREFIX}chain_head_block`,
    help: 'Latest head block of each chain that a scan has seen (stored, so every process reports the same)',
    labelNames: ['chain'],
    registers,
    async collect() {
      this.reset();
      for (const row of await checkpoints()) if (row.head_number !== null) this.set({ chain: row.chain_id }, Number(row.head_number));
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}chain_checkpoint_block`,
    help: 'Last block scanned per chain (the stored checkpoint)',
    labelNames: ['chain'],
    registers,
    async collect() {
      this.reset();
      for (const row of await checkpoints()) this.set({ chain: row.chain_id }, Number(row.block_number));
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}chain_lag_seconds`,
    help: "Seconds between now and the checkpoint block's timestamp (how far detection is behind the chain)",
    labelNames: ['chain'],
    registers,
    async collect() {
      this.reset();
      const now = ctx.clock.now().getTime();
      for (const row of await checkpoints()) this.set({ chain: row.chain_id }, Math.max(0, (now - new Date(row.block_timestamp).getTime()) / 1000));
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}chain_lag_blocks`,
    help: 'Blocks between the stored head and the checkpoint',
    labelNames: ['chain'],
    registers,
    async collect() {
      this.reset();
      for (const row of await checkpoints()) {
        if (row.head_number !== null) this.set({ chain: row.chain_id }, Math.max(0, Number(row.head_number) - Number(row.block_number)));
      }
    },
  });

  // Attribution needs a look at most L old behind every hand-over (core/detection/head-looks.ts):
  // an age above L while orders are created means their fast payers may be left undecidable.
  new Gauge({
    name: `${METRIC_PREFIX}chain_head_look_age_seconds`,
    help: "Seconds since any process's latest look at each enabled chain's head (stored, so every process reports the same)",
    labelNames: ['chain'],
    registers,
    async collect() {
      this.reset();
      const chainIds = ctx.registry.list().filter((c) => c.enabled).map((c) => c.chainId);
      if (chainIds.length === 0) return;
      const rows = (await ctx.db.execute(sql`
        select c.chain_id, (select o.last_seen_at from chain_head_observations o where o.chain_id = c.chain_id order by o.head_number desc limit 1) as at
        from unnest(${sql.param(chainIds)}::text[]) as c(chain_id)`)) as unknown as { chain_id: string; at: Date | string | null }[];
      const now = ctx.clock.now().getTime();
      for (const row of rows) if (row.at !== null) this.set({ chain: row.chain_id }, Math.max(0, (now - new Date(row.at).getTime()) / 1000));
    },
  });

  new Gauge({
    name: `${METRIC_PREFIX}pool_addresses`,
    help: 'Pool addresses per protocol and status (available, allocated, bound, cooldown)',
    labelNames: ['protocol', 'status'],
    registers,
    async collect() {
      this.reset();
      const rows = (await ctx.db.execute(sql`select protocol, status, count(*)::int as n from pool_addresses group by protocol, status`)) as unknown as { protocol: string; status: string; n: number }[];
      for (const row of rows) this.set({ protocol: row.protocol, status: row.status }, Number(row.n));
    },
  });
  if (ctx.config.metrics.perOrganization) {
    new Gauge({
      name: `${METRIC_PREFIX}pool_addresses_by_organization`,
      help: 'Pool addresses per organization, protocol and status (METRICS_PER_ORG=true: one series set per organization)',
      labelNames: ['organization', 'protocol', 'status'],
      registers,
      async collect() {
        this.reset();
        const rows = (await ctx.db.execute(
          sql`select organization_id, protocol, status, count(*)::int as n from pool_addresses group by organization_id, protocol, status`,
        )) as unknown as { organization_id: string; protocol: string; status: string; n: number }[];
        for (const row of rows) this.set({ organization: row.organization_id, protocol: row.protocol, status: row.status }, Number(row.n));
      },
    });
  }
  return registry;
}
