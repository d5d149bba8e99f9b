import { eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { chainCheckpoints, serviceState } from '../../db/schema';
import type { Chain } from '../chains/registry';
import { emitEvent } from '../events/events';
import { idAt } from '../platform/ids';
import { startRepeatingTurn } from '../platform/repeating-turn';
import type { ServiceContext } from '../service/context';
import { subscribedOrganizations } from './stall';

/**
 * Alerting on the gap, not after it (issue 39). Attribution credits a payment to an order or a
 * binding only when a look at the chain's head (head-looks.ts) was taken at most L before the
 * hand-over; while no process manages to look (every provider failing or hanging, for every
 * process), the fast payers of the addresses handed out meanwhile may be left `undecidable`. That
 * is said while it happens, not 300 s later (CHAIN_STALL_ALERT_SECONDS):
 *
 * A chain's looks are, from the database alone (the same answer in every process, /health's too):
 *   - ok: the newest look departed at most HEAD_LOOK_ALERT_AFTER_SECONDS ago;
 *   - stale: it is older (or no look was ever stored), but no address of the chain was handed out
 *     since: nothing is at risk yet, nobody is alerted;
 *   - stopped: it is older, and an order on the chain or a binding of its protocol family was
 *     created since (within the last HANDOUT_LOOKBACK_MS: what "while orders are being created"
 *     means; an open gap stays stopped until a look comes).
 * A gap (episode) is identified by the departure of the last look before it, and recorded as a
 * service_state row per chain (no migration: the row is the episode, like stall.ts's stalled_since),
 * begun and ended under a per-chain advisory lock, so the fleet logs and alerts once per gap: a
 * warn line and alert.chain_stalled with reason `looks_stopped` to each organization with an
 * enabled endpoint subscribed to it; an info line when looks resume.
 *
 * Why alert.chain_stalled with a reason rather than a new event type: the spec lists event types
 * (only alert.address_pool_low) without forbidding more, and this service adds its own, so a new
 * type would be allowed; but its subscribers are exactly the people who asked to hear that the
 * service cannot follow a chain, which is what this says, and a new type would reach no endpoint
 * until each organization subscribed to it. The reason field exists to say why. Its episode is its
 * own (not chain_checkpoints.stalled_since): a gap that lasts CHAIN_STALL_ALERT_SECONDS still
 * raises the stall's own alert, with the stall's reason, as before.
 */

export type LooksState = 'ok' | 'stale' | 'stopped';

export interface ChainLooks {
  chainId: string;
  looks: LooksState;
  /** When the newest stored look departed (any process's); null: none was ever stored. */
  lastLookAt: Date | null;
  /** The head that look saw. */
  head: number | null;
  /** now − lastLookAt, in ms; null without a look. */
  ageMs: number | null;
}

/** A hand-out older than this does not begin a gap (and bounds the read of recent orders). */
const HANDOUT_LOOKBACK_MS = 10 * 60_000;
/** Ids carry the creating process's wall clock (a ULID), created_at the service clock: a margin between them. */
const ID_CLOCK_MARGIN_MS = 60_000;

const episodeKey = (chainId: string) => `head_look_gap:${chainId}`;

/** The stored episode of a gap (service_state value). */
interface Episode {
  /** The departure of the last look before the gap (ISO). */
  since: string;
  head: number | null;
}

type LooksContext = Pick<ServiceContext, 'db' | 'registry' | 'config'>;

interface LookRow {
  chain: Chain;
  lastLookAt: Date | null;
  head: number | null;
  episode: Episode | null;
}

/** Every enabled chain's looks at `now` (/health, the watch). */
export async function chainLooks(ctx: LooksContext, now: Date): Promise<ChainLooks[]> {
  const rows = await readLooks(ctx.db, ctx.registry.list().filter((c) => c.enabled));
  return Promise.all(rows.map(async (row) => toLooks(ctx, row, await judge(ctx.db, ctx, row, now), now)));
}

/**
 * The watch's turn (a timer of every process that looks, head-looks.ts): begins the episode of each
 * chain whose looks stopped and ends the episode of each whose looks came back. Each change is
 * made under the chain's advisory lock, judged again inside it, so two processes never both begin
 * (or end) one gap.
 */
export async function judgeHeadLookGaps(ctx: ServiceContext): Promise<void> {
  const now = ctx.clock.now();
  for (const row of await readLooks(ctx.db, ctx.registry.list().filter((c) => c.enabled))) {
    if ((await judge(ctx.db, ctx, row, now)) === (row.episode?.since ?? null)) continue;
    await ctx.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${episodeKey(row.chain.chainId)}, 0))`);
      const [current] = await readLooks(tx, [row.chain]);
      const gap = await judge(tx, ctx, current, now);
      const open = current.episode;
      if (gap === (open?.since ?? null)) return;
      if (open) {
        await tx.delete(serviceState).where(eq(serviceState.key, episodeKey(row.chain.chainId)));
        ctx.logger.info(
          { chainId: row.chain.chainId, since: open.since, resumedAt: current.lastLookAt?.toISOString() ?? null, head: current.head },
          `head looks at chain ${row.chain.chainId} resumed`,
        );
      }
      if (gap !== null) await beginGap(tx, ctx, current, gap, now);
    });
  }
}

async function beginGap(tx: DbOrTx, ctx: ServiceContext, row: LookRow, since: string, now: Date): Promise<void> {
  const chainId = row.chain.chainId;
  const episode: Episode = { since, head: row.head };
  await tx
    .insert(serviceState)
    .values({ key: episodeKey(chainId), value: episode as never, updatedAt: now })
    .onConflictDoUpdate({ target: serviceState.key, set: { value: episode as never, updatedAt: now } });
  const [checkpoint] = await tx.select({ blockNumber: chainCheckpoints.blockNumber }).from(chainCheckpoints).where(eq(chainCheckpoints.chainId, chainId));
  // The data of alert.chain_stalled (stall.ts); checkpoint null only for a chain never scanned.
  const data = { chainId, reason: 'looks_stopped', since, head: row.head, checkpoint: checkpoint?.blockNumber ?? null };
  const ageSeconds = Math.round((now.getTime() - new Date(since).getTime()) / 1000);
  ctx.logger.warn(
    { ...data, ageSeconds, thresholdSeconds: ctx.config.headLookAlertMs / 1000 },
    `head looks at chain ${chainId} stopped: none for ${ageSeconds} s while its addresses are handed out; fast payers may be left undecidable (looks_stopped)`,
  );
  for (const organizationId of await subscribedOrganizations(tx, 'alert.chain_stalled')) {
    await emitEvent(tx, { organizationId, type: 'alert.chain_stalled', createdAt: now, data });
  }
}

/** The newest look of each chain (one index step each) and its open episode, if any. */
async function readLooks(db: DbOrTx, chains: Chain[]): Promise<LookRow[]> {
  if (chains.length === 0) return [];
  const rows = (await db.execute(sql`
    select c.chain_id, o.head_number, o.last_seen_at, s.value as episode
    from unnest(${sql.param(chains.map((c) => c.chainId))}::text[]) with ordinality as c(chain_id, n)
    left join lateral (
      select head_number, last_seen_at from chain_head_observations
      where chain_id = c.chain_id order by head_number desc limit 1) o on true
    left join service_state s on s.key = 'head_look_gap:' || c.chain_id
    order by c.n`)) as unknown as { chain_id: string; head_number: string | number | null; last_seen_at: string | Date | null; episode: Episode | null }[];
  return rows.map((r, i) => ({
    chain: chains[i],
    lastLookAt: r.last_seen_at === null ? null : new Date(r.last_seen_at),
    head: r.head_number === null ? null : Number(r.head_number),
    episode: r.episode,
  }));
}

/** The gap a chain is in at `now` (the departure of its last look, ISO), or null. */
async function judge(db: DbOrTx, ctx: Pick<ServiceContext, 'config'>, row: LookRow, now: Date): Promise<string | null> {
  if (row.lastLookAt === null || now.getTime() - row.lastLookAt.getTime() <= ctx.config.headLookAlertMs) return null;
  const since = row.lastLookAt.toISOString();
  // Hand-outs since the last look only accumulate while no new look comes: an open gap stays open.
  if (row.episode?.since === since) return since;
  return (await handedOutSince(db, row.chain, new Date(Math.max(row.lastLookAt.getTime(), now.getTime() - HANDOUT_LOOKBACK_MS)))) ? since : null;
}

function toLooks(ctx: Pick<ServiceContext, 'config'>, row: LookRow, gap: string | null, now: Date): ChainLooks {
  const ageMs = row.lastLookAt === null ? null : Math.max(0, now.getTime() - row.lastLookAt.getTime());
  const looks: LooksState = gap !== null ? 'stopped' : ageMs === null || ageMs > ctx.config.headLookAlertMs ? 'stale' : 'ok';
  return { chainId: row.chain.chainId, looks, lastLookAt: row.lastLookAt, head: row.head, ageMs };
}

/**
 * Whether an address that can be paid on the chain was handed out after `since`: an order on the
 * chain, or a binding of its protocol family (a reference is monitored on every chain of its
 * family). Both ids are time-ordered (ULIDs), so each is a short range of a primary key.
 */
async function handedOutSince(db: DbOrTx, chain: Chain, since: Date): Promise<boolean> {
  const from = since.getTime() - ID_CLOCK_MARGIN_MS;
  const rows = (await db.execute(sql`
    select exists (
      select 1 from orders where id >= ${idAt('ord', from)} and chain_id = ${chain.chainId} and created_at > ${since.toISOString()}::timestamptz
    ) or exists (
      select 1 from deposit_bindings where id >= ${idAt('dr', from)} and protocol = ${chain.protocol} and created_at > ${since.toISOString()}::timestamptz
    ) as handed_out`)) as unknown as { handed_out: boolean }[];
  return rows[0]?.handed_out === true;
}

export interface HeadLookWatch {
  /** One turn now; resolves when it is done (tests). */
  runOnce(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The watch's timer, started with each process's looks (head-looks.ts): a turn every fifth of
 * HEAD_LOOK_ALERT_AFTER_SECONDS (from 0.25 s to 5 s), so a gap is said at most that long after
 * the threshold. A turn costs one statement while every chain is looked at (one more per chain
 * whose last look is older than the threshold). A failed turn (the database) is logged once per
 * outage at debug: the requests and jobs failing meanwhile say it louder.
 */
export function startHeadLookWatch(ctx: ServiceContext): HeadLookWatch {
  const everyMs = Math.min(5000, Math.max(250, Math.floor(ctx.config.headLookAlertMs / 5)));
  let failing = false;
  return startRepeatingTurn(everyMs, () =>
    judgeHeadLookGaps(ctx).then(
      () => void (failing = false),
      (err: unknown) => {
        if (!failing) ctx.logger.debug({ err: { message: (err as Error).message } }, 'could not judge the head looks; the watch goes on');
        failing = true;
      },
    ),
  );
}
