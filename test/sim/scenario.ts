import type { Rng } from './rng';

/**
 * The seeded scenario: what the merchants and payers do, decided before anything runs. Times are
 * milliseconds from the scenario's start (order creation) or from the order's own creation
 * (payments), so the same seed gives the same operations whatever the machine's timing.
 */
export type Currency = 'USDT' | 'USDC' | 'DAI';
export const CURRENCIES: readonly Currency[] = ['USDT', 'USDC', 'DAI'];
export const DECIMALS: Record<Currency, number> = { USDT: 6, USDC: 6, DAI: 18 };

/**
 * The chain families the simulation runs, each on its local chain: EVM on anvil (ethereum-local,
 * three test tokens), Tron on tron-local (its one TRC-20 test USDT), Solana on solana-local (its
 * test USDC and USDT mints on the real SPL Token program).
 */
export type Family = 'evm' | 'tron' | 'solana';
export const FAMILIES: readonly Family[] = ['evm', 'tron', 'solana'];
export const CURRENCIES_OF: Record<Family, readonly Currency[]> = { evm: CURRENCIES, tron: ['USDT'], solana: ['USDC', 'USDT'] };
/** Share of orders and deposit references on tron-local. */
export const TRON_SHARE = 0.3;
/** Share of the others on solana-local. */
export const SOLANA_SHARE = 0.3;

/** A family drawn at the shares above. */
const familyOf = (rng: Rng): Family => (rng.chance(TRON_SHARE) ? 'tron' : rng.chance(SOLANA_SHARE) ? 'solana' : 'evm');

export type OrderKind =
  | 'exact'
  | 'partial-topup'
  | 'partial-only'
  | 'over'
  | 'late-in-grace'
  | 'after-grace'
  | 'duplicated'
  | 'wrong-token'
  | 'unpaid'
  | 'batched'
  | 'paid-after-completion'
  | 'instant';

export const ORDER_KIND_WEIGHTS: Record<OrderKind, number> = {
  exact: 24,
  'partial-topup': 12,
  'partial-only': 5,
  over: 8,
  'late-in-grace': 8,
  'after-grace': 6,
  duplicated: 8,
  'wrong-token': 6,
  unpaid: 4,
  batched: 12,
  'paid-after-completion': 7,
  // Pays within a second of the order's creation (issue 25): the hand-over's edge.
  instant: 8,
};

/** When a payment is sent, relative to its order: a phase of the order's life and an offset in it. */
export type PaymentTiming =
  | { phase: 'window'; fraction: number }
  | { phase: 'grace'; fraction: number }
  | { phase: 'after-grace'; offsetMs: number }
  | { phase: 'after-completion'; offsetMs: number }
  | { phase: 'instant'; offsetMs: number };

export interface PlannedPayment {
  /** Fraction of the order amount in millionths (1_000_000 = exact). */
  partsPerMillion: number;
  currency: Currency;
  timing: PaymentTiming;
  /** Sent inside a batch transaction with other payments. */
  batched: boolean;
}

export interface PlannedOrder {
  n: number;
  family: Family;
  kind: OrderKind;
  org: number;
  createAtMs: number;
  currency: Currency;
  /** Amount in whole token hundredths (e.g. 1250 = 12.50). */
  hundredths: number;
  windowMinutes: number;
  graceMinutes: number;
  payments: PlannedPayment[];
}

export interface PlannedDepositPayment {
  atMs: number;
  currency: Currency;
  hundredths: number;
  batched: boolean;
}

export interface PlannedDeposit {
  n: number;
  family: Family;
  org: number;
  bindAtMs: number;
  payments: PlannedDepositPayment[];
  /** Unbound at this time (after its payments), then paid once more while cooled down or recycled. */
  unbindAtMs: number | null;
  paidAfterUnbind: PlannedDepositPayment | null;
}

export interface PlannedOrg {
  n: number;
  cooldownMinutes: number;
  unbindCooldownMinutes: number;
  /** Pool addresses per protocol family. */
  poolSize: Record<Family, number>;
  /** Per endpoint: subscribed types and whether it may answer 410. */
  endpoints: { events: string[]; mayGo: boolean }[];
}

export interface FaultPlan {
  atMs: number;
  kind: 'reorg' | 'kill' | 'redis-restart' | 'stall' | 'workers-down';
  /** reorg: depth; kill: worker index; redis: down time in ms; stall: how long the family's provider holds every call, ms; workers-down: ms. */
  value: number;
  /** reorg: the chain reorganised (tron-local orphans unsolidified blocks, re-including their transactions or not). */
  family?: Family;
  reinclude?: boolean;
}

/** A payment to a pool address that nobody asked for (meant for nothing): never to be credited. */
export interface PlannedStray {
  n: number;
  family: Family;
  org: number;
  atMs: number;
  currency: Currency;
  hundredths: number;
}

/**
 * What the merchant does when it pays a refund it approved (issue 42), from its own wallet:
 * - `on-time`: the amount, a few seconds after approving;
 * - `partial-then-rest`: part of it, then the rest later; `partial-only`: part of it, never the rest;
 * - `wrong-address`: the amount to another address (a copy error), never to the destination;
 *   `wrong-then-right`: the same, then the amount to the destination;
 * - `early`: the amount to the destination before approving (it jumped the gun), never again;
 *   `early-then-right`: the same, then the amount again after approving;
 * - `late`: the amount, long after approving.
 */
export type RefundBehaviour = 'on-time' | 'partial-then-rest' | 'partial-only' | 'wrong-address' | 'wrong-then-right' | 'early' | 'early-then-right' | 'late';
export const REFUND_BEHAVIOUR_WEIGHTS: Record<RefundBehaviour, number> = {
  'on-time': 5,
  'partial-then-rest': 2,
  'partial-only': 1,
  'wrong-address': 1,
  'wrong-then-right': 1,
  early: 1,
  'early-then-right': 1,
  late: 2,
};
/** Order kinds that end completed (a refund is issued once its order completes). */
export const REFUNDABLE_KINDS: readonly OrderKind[] = ['exact', 'partial-topup', 'over', 'late-in-grace', 'duplicated', 'batched', 'paid-after-completion', 'instant'];
/** At most this many refunds a run: the claim page allows 30 posts per IP an hour (every claim comes from the simulation's one IP). */
export const MAX_REFUNDS = 20;

/**
 * A refund of a completed order (issue 42): issued by the merchant (default amount: the overpaid
 * part, else everything received), claimed by the payer with a fresh address of the family,
 * approved, then paid by the merchant as its behaviour says. Times are ms after the step before
 * (issue: after the order completed; pay: after approval, or before it for `early`).
 */
export interface PlannedRefund {
  n: number;
  /** The order's n. */
  order: number;
  behaviour: RefundBehaviour;
  issueAfterMs: number;
  claimAfterMs: number;
  approveAfterMs: number;
  /** The first (or only) payment after approval. */
  payAfterMs: number;
  /** partial-*: the first payment's share of the amount, in millionths. */
  firstPartPpm: number;
  /** partial-then-rest, wrong-then-right, early-then-right: the next payment, ms after the first. */
  restAfterMs: number;
}

export interface Scenario {
  seed: number;
  payments: number;
  spreadMs: number;
  /** Per family: how far its chain's clock runs behind the service's, in seconds (negative: ahead), up to 2 × S either way. */
  chainLagSeconds: Record<Family, number>;
  strays: PlannedStray[];
  orgs: PlannedOrg[];
  orders: PlannedOrder[];
  deposits: PlannedDeposit[];
  faults: FaultPlan[];
  /** Refunds of completed orders (drawn from a stream of their own: the rest of a seed's scenario is as before refunds existed). */
  refunds: PlannedRefund[];
}

export interface ScenarioShape {
  payments: number;
  workers: number;
  /** Required order confirmations per family (reorg depths are drawn around it; Tron: its solidification depth). */
  confirmations: Record<Family, number>;
  /** Scale of the scenario: orders are created over this many ms. */
  spreadMs?: number;
  /** Per family: S, the effective minimum cooldown, in seconds (chain clocks are off by up to 2 × S; late payers aim around it). */
  skewSeconds: Record<Family, number>;
  /** The fault schedule: a preset and overrides of it (default: heavy, today's schedule). */
  faults?: FaultSettings;
  /** Pool sizing (default: 'recycling'). */
  pool?: PoolMode;
}

/**
 * The fault presets (`npm run sim -- --faults …`):
 * - `heavy` (the default): the schedule the simulation has always run, drawn the same way, so a seed
 *   gives the same scenario as before the presets existed — every RPC fault rate as in
 *   DEFAULT_RPC_FAULTS, scanner stalls of 1 s up to 120 s (at least three, the first on each
 *   family), every worker down for 3–20 s (at least once), worker kills (at least two), Redis
 *   restarts (at least one) and reorgs on every chain;
 * - `realistic`: RPC fault rates × 0.2, two stalls (EVM, then Tron) of 1–9 s, one worker kill, no
 *   every-worker-down period, no Redis restart, the same reorgs as heavy (shallow reorgs are normal
 *   on real chains; about a third of anvil's are deeper than the required confirmations);
 * - `none`: no fault at all (no RPC faults, stalls, kills, every-worker-down periods, Redis restarts
 *   or reorgs).
 * The presets draw the scenario's random numbers exactly as heavy does and then keep the first N
 * faults of each kind (N: the preset's count or the override); a count above heavy's draws the
 * extra faults from a stream of their own, so the orders, payments, strays and clocks of a seed
 * are the same under every preset and override.
 */
export type FaultPreset = 'none' | 'realistic' | 'heavy';
export const FAULT_PRESETS: readonly FaultPreset[] = ['none', 'realistic', 'heavy'];

/** A preset and its overrides (undefined: the preset's own value). */
export interface FaultSettings {
  preset: FaultPreset;
  /** Multiplier of the RPC proxy's fault rates (DEFAULT_RPC_FAULTS; each rate capped at 1). */
  rpcFaultScale?: number;
  /** Scanner stalls (a family's provider holds every call). */
  stalls?: number;
  /** Periods with every worker down while the API goes on allocating (a deploy of the job tier). */
  workersDown?: number;
  /** Worker SIGKILLs (the worker restarts). */
  kills?: number;
  /** Redis restarts (empty). */
  redisRestarts?: number;
  /** Reorgs (the first on anvil, the second on tron-local, the third on solana-local, then drawn). */
  reorgs?: number;
}

/**
 * Pool sizing: `recycling` (today's) gives organizations with a cooldown of 0 fewer addresses than
 * their orders and references, so addresses are reused; `fresh` gives every organization its
 * demand per family plus a margin, so every order and reference gets a never-used address.
 */
export type PoolMode = 'recycling' | 'fresh';
export const POOL_MODES: readonly PoolMode[] = ['recycling', 'fresh'];

/** The RPC fault scale of each preset. */
export const PRESET_RPC_FAULT_SCALE: Record<FaultPreset, number> = { none: 0, realistic: 0.2, heavy: 1 };
/** The multiplier of the RPC proxy's fault rates for these settings. */
export const rpcFaultScaleOf = (faults: FaultSettings | undefined): number => faults?.rpcFaultScale ?? PRESET_RPC_FAULT_SCALE[faults?.preset ?? 'heavy'];
/** The longest stall of the realistic and none presets (under 10 s); heavy's bound scales with the run. */
export const SHORT_STALL_MAX_MS = 9_000;

/** Counts of each scheduled fault kind. */
export interface FaultCounts {
  reorgs: number;
  stalls: number;
  workersDown: number;
  kills: number;
  redisRestarts: number;
}

/** The counts a preset asks for, given heavy's for the run's scale, with the overrides applied. */
export function faultCountsOf(faults: FaultSettings | undefined, heavy: FaultCounts): FaultCounts {
  const preset = faults?.preset ?? 'heavy';
  const base: FaultCounts =
    preset === 'heavy'
      ? heavy
      : preset === 'realistic'
        ? { reorgs: heavy.reorgs, stalls: 2, workersDown: 0, kills: 1, redisRestarts: 0 }
        : { reorgs: 0, stalls: 0, workersDown: 0, kills: 0, redisRestarts: 0 };
  return {
    reorgs: faults?.reorgs ?? base.reorgs,
    stalls: faults?.stalls ?? base.stalls,
    workersDown: faults?.workersDown ?? base.workersDown,
    kills: faults?.kills ?? base.kills,
    redisRestarts: faults?.redisRestarts ?? base.redisRestarts,
  };
}

/** The settings as a command line's flags would say them, e.g. `realistic --workers-down 1 --pool fresh`. */
export function describeFaults(faults: FaultSettings | undefined, pool: PoolMode | undefined): string {
  const f = faults ?? { preset: 'heavy' };
  const flags: [string, number | undefined][] = [
    ['rpc-fault-scale', f.rpcFaultScale],
    ['stalls', f.stalls],
    ['workers-down', f.workersDown],
    ['kills', f.kills],
    ['redis-restarts', f.redisRestarts],
    ['reorgs', f.reorgs],
  ];
  return [f.preset, ...flags.filter(([, v]) => v !== undefined).map(([k, v]) => `--${k} ${v}`), ...(pool === 'fresh' ? ['--pool fresh'] : [])].join(' ');
}

const SUBSCRIPTIONS: string[][] = [
  // Every organization's first endpoint also hears of its refunds (refund-oracle.ts checks one
  // refund.claimed per claim and one refund.completed per completion; the invariants, the delivery).
  ['order.completed', 'order.expired', 'deposit.pending', 'deposit.confirmed', 'refund.claimed', 'refund.completed'],
  ['order.completed', 'deposit.confirmed'],
  ['order.expired', 'deposit.pending'],
];

function paymentsFor(kind: OrderKind, currency: Currency, rng: Rng, skewMs: number, currencies: readonly Currency[] = CURRENCIES): PlannedPayment[] {
  const other = (c: Currency) => rng.pick(currencies.filter((x) => x !== c));
  const inWindow = (): PaymentTiming => ({ phase: 'window', fraction: rng.next() });
  const p = (partsPerMillion: number, timing: PaymentTiming, cur: Currency = currency, batched = false): PlannedPayment => ({ partsPerMillion, currency: cur, timing, batched });
  switch (kind) {
    case 'exact':
      return [p(1_000_000, inWindow())];
    case 'partial-topup': {
      const first = rng.int(100_000, 900_000);
      const a = rng.next() * 0.5;
      return [p(first, { phase: 'window', fraction: a }), p(1_000_000 - first, { phase: 'window', fraction: a + 0.1 + rng.next() * 0.4 })];
    }
    case 'partial-only':
      return [p(rng.int(100_000, 900_000), inWindow())];
    case 'over':
      return [p(1_000_000 + rng.int(1, 500_000), inWindow())];
    case 'late-in-grace':
      return [p(1_000_000, { phase: 'grace', fraction: rng.next() })];
    case 'after-grace':
      return [p(1_000_000, { phase: 'after-grace', offsetMs: rng.int(4_000, 15_000) })];
    case 'duplicated': {
      const t = rng.next() * 0.6;
      return [p(1_000_000, { phase: 'window', fraction: t }), p(1_000_000, { phase: 'window', fraction: t + rng.next() * 0.3 })];
    }
    case 'wrong-token':
      return [p(1_000_000, inWindow(), other(currency))];
    case 'unpaid':
      return [];
    case 'batched':
      return [p(rng.chance(0.8) ? 1_000_000 : rng.int(100_000, 900_000), inWindow(), currency, true)];
    case 'paid-after-completion':
      // Late payers of the previous holder: soon after, or around the end of the cooldown S when
      // the address may go to its next holder (issue 25).
      return [
        p(1_000_000, { phase: 'window', fraction: rng.next() * 0.3 }),
        p(rng.int(100_000, 1_000_000), { phase: 'after-completion', offsetMs: rng.chance(0.5) ? rng.int(2_000, 20_000) : rng.int(skewMs - 5_000, skewMs + 30_000) }),
      ];
    case 'instant':
      return [p(1_000_000, { phase: 'instant', offsetMs: rng.int(0, 1_000) })];
  }
}

/** Builds the whole scenario from a seed. */
export function buildScenario(seed: number, shape: ScenarioShape, rng: Rng): Scenario {
  const spreadMs = shape.spreadMs ?? Math.max(20_000, shape.payments * 60);
  const orgCount = Math.max(2, Math.min(20, Math.round(shape.payments / 60)));
  const orgs: PlannedOrg[] = Array.from({ length: orgCount }, (_, n) => ({
    n,
    // Half the organizations configure a cooldown of 0 (the service raises it to S), the others a
    // minute: a payment to a released address in its cooldown stays unattributed; one after it, to
    // the next holder, must never be credited to that holder (issue 25).
    cooldownMinutes: n % 2 === 0 ? 0 : 1,
    unbindCooldownMinutes: n % 2 === 0 ? 0 : 1,
    poolSize: { evm: 0, tron: 0, solana: 0 },
    endpoints: Array.from({ length: rng.int(1, 2) }, (_, e) => ({ events: e === 0 ? SUBSCRIPTIONS[0] : rng.pick(SUBSCRIPTIONS), mayGo: n === 1 && e === 1 })),
  }));
  // Organization 1 always has a second endpoint that may answer 410 Gone.
  if (orgs[1].endpoints.length < 2) orgs[1].endpoints.push({ events: SUBSCRIPTIONS[0], mayGo: true });

  const orders: PlannedOrder[] = [];
  const deposits: PlannedDeposit[] = [];
  let planned = 0;
  const depositShare = 0.15;
  while (planned < shape.payments) {
    const family = familyOf(rng);
    const currencies = CURRENCIES_OF[family];
    if (rng.chance(depositShare)) {
      const bindAtMs = rng.int(0, Math.floor(spreadMs * 0.8));
      const count = rng.int(1, 3);
      const pays: PlannedDepositPayment[] = Array.from({ length: count }, () => ({
        atMs: bindAtMs + rng.int(2_000, Math.max(3_000, Math.floor(spreadMs * 0.2) + 20_000)),
        currency: rng.pick(currencies),
        hundredths: rng.int(1, 100_000),
        batched: rng.chance(0.2),
      }));
      pays.sort((a, b) => a.atMs - b.atMs);
      const unbind = rng.chance(0.3);
      const last = pays[pays.length - 1].atMs;
      const unbindAtMs = unbind ? last + rng.int(8_000, 15_000) : null;
      deposits.push({
        n: deposits.length,
        family,
        org: rng.int(0, orgCount - 1),
        bindAtMs,
        payments: pays,
        unbindAtMs,
        paidAfterUnbind: unbindAtMs === null ? null : { atMs: unbindAtMs + rng.int(3_000, 20_000), currency: rng.pick(currencies), hundredths: rng.int(1, 10_000), batched: false },
      });
      planned += count + (unbind ? 1 : 0);
      continue;
    }
    // tron-local has one token: a Tron order cannot be paid in the wrong one.
    const kind = rng.weighted(family === 'tron' ? { ...ORDER_KIND_WEIGHTS, 'wrong-token': 0 } : ORDER_KIND_WEIGHTS);
    const currency = rng.pick(currencies);
    const graceMinutes = kind === 'late-in-grace' ? 1 : kind === 'after-grace' ? 0 : rng.chance(0.3) ? 1 : 0;
    const order: PlannedOrder = {
      n: orders.length,
      family,
      kind,
      org: rng.int(0, orgCount - 1),
      createAtMs: rng.int(0, spreadMs),
      currency,
      hundredths: rng.int(1, 500_000),
      windowMinutes: rng.chance(0.85) ? 1 : 2,
      graceMinutes,
      payments: paymentsFor(kind, currency, rng, shape.skewSeconds[family] * 1000, currencies),
    };
    orders.push(order);
    planned += order.payments.length;
  }
  orders.sort((a, b) => a.createAtMs - b.createAtMs).forEach((o, i) => (o.n = i));
  // Pools: cooled-down organizations need an address per live order; recycling ones get fewer, so
  // addresses are reused (a payment to a recycled address then goes to its next holder).
  for (const org of orgs) {
    for (const family of FAMILIES) {
      const demand = orders.filter((o) => o.org === org.n && o.family === family).length + deposits.filter((d) => d.org === org.n && d.family === family).length;
      org.poolSize[family] =
        shape.pool === 'fresh'
          ? // Every order and reference a never-used address, with room for retried creations.
            demand + Math.max(5, Math.ceil(demand * 0.1))
          : org.cooldownMinutes === 0
            ? Math.max(8, Math.ceil(demand * 0.8))
            : demand + 5;
    }
  }

  const endMs = spreadMs + 150_000;
  // Heavy's schedule is drawn first, always, in the order it has always been drawn (reorgs, stalls,
  // every-worker-down periods, kills, Redis restarts): the rest of the scenario then draws the same
  // numbers under every preset, and heavy's is the same as before the presets existed.
  const heavy: FaultCounts = {
    reorgs: Math.max(4, Math.min(Math.round(shape.payments / 40), Math.floor(endMs / 6_000))),
    stalls: Math.max(3, Math.floor(endMs / 60_000)),
    workersDown: Math.max(1, Math.floor(endMs / 200_000)),
    kills: Math.max(2, Math.floor(endMs / 40_000)),
    redisRestarts: Math.max(1, Math.floor(endMs / 240_000)),
  };
  const reorgAt = (i: number, r: Rng): FaultPlan => {
    const atMs = r.int(5_000, spreadMs + 90_000);
    // Every run reorganises every chain: the first reorg is anvil's, the second tron-local's, the third a solana-local fork.
    if (i === 2 || (i > 2 && r.chance(SOLANA_SHARE))) {
      // solana-local forks off only unfinalized blocks: 1 to a few of the newest, their transactions re-included or gone.
      return { atMs, kind: 'reorg', family: 'solana', value: r.int(1, Math.max(1, Math.min(4, shape.confirmations.solana - 2))), reinclude: r.chance(0.5) };
    }
    const tron = i === 1 || (i > 2 && r.chance(TRON_SHARE));
    if (tron) {
      // tron-local orphans only unsolidified blocks (solidified ones are final on Tron): depth 1 to
      // its solidification depth − 1, the orphaned transactions re-included in the new blocks or gone.
      return { atMs, kind: 'reorg', family: 'tron', value: r.int(1, shape.confirmations.tron - 1), reinclude: r.chance(0.5) };
    }
    const c = shape.confirmations.evm;
    const deep = r.chance(0.35);
    return { atMs, kind: 'reorg', family: 'evm', value: deep ? r.int(c + 1, c + 6) : r.int(1, c - 1) };
  };
  // Scanner stalls (issue 25): the family's provider holds every call for 1 s up to 120 s (bounded
  // by the run's scale), no error; and every worker down for a while as the API goes on allocating.
  const stallMaxMs = Math.min(120_000, Math.max(5_000, spreadMs * 2));
  const stallAt = (i: number, r: Rng): FaultPlan => ({
    atMs: r.int(3_000, spreadMs + 60_000),
    kind: 'stall',
    family: i === 1 ? 'tron' : i === 0 ? 'evm' : i === 2 ? 'solana' : familyOf(r),
    value: r.int(1_000, stallMaxMs),
  });
  const workersDownAt = (_i: number, r: Rng): FaultPlan => ({ atMs: r.int(3_000, spreadMs), kind: 'workers-down', value: r.int(3_000, 20_000) });
  const killAt = (_i: number, r: Rng): FaultPlan => ({ atMs: r.int(3_000, spreadMs + 90_000), kind: 'kill', value: r.int(0, shape.workers - 1) });
  const redisRestartAt = (_i: number, r: Rng): FaultPlan => ({ atMs: r.int(10_000, spreadMs + 60_000), kind: 'redis-restart', value: r.int(200, 3_000) });
  const drawn = {
    reorgs: Array.from({ length: heavy.reorgs }, (_, i) => reorgAt(i, rng)),
    stalls: Array.from({ length: heavy.stalls }, (_, i) => stallAt(i, rng)),
    workersDown: Array.from({ length: heavy.workersDown }, (_, i) => workersDownAt(i, rng)),
    kills: Array.from({ length: heavy.kills }, (_, i) => killAt(i, rng)),
    redisRestarts: Array.from({ length: heavy.redisRestarts }, (_, i) => redisRestartAt(i, rng)),
  };
  // The preset's (or the overrides') first N of each kind; more than heavy drew come from a stream
  // of their own (a fork draws nothing from this one).
  const want = faultCountsOf(shape.faults, heavy);
  const take = (kind: keyof FaultCounts, at: (i: number, r: Rng) => FaultPlan): FaultPlan[] => {
    const extra = rng.fork(`extra-${kind}`);
    return Array.from({ length: want[kind] }, (_, i) => (i < drawn[kind].length ? drawn[kind][i] : at(i, extra)));
  };
  const shortStalls = (shape.faults?.preset ?? 'heavy') !== 'heavy';
  const faults: FaultPlan[] = [
    ...take('reorgs', reorgAt),
    // realistic and none: the same stalls, their durations scaled from heavy's 1 s–stallMaxMs into 1–9 s.
    ...take('stalls', stallAt).map((f) => (shortStalls ? { ...f, value: 1_000 + Math.floor(((f.value - 1_000) / (stallMaxMs - 1_000 + 1)) * (SHORT_STALL_MAX_MS - 1_000 + 1)) } : f)),
    ...take('workersDown', workersDownAt),
    ...take('kills', killAt),
    ...take('redisRestarts', redisRestartAt),
  ];
  faults.sort((a, b) => a.atMs - b.atMs);

  // Strays: payments to pool addresses nobody asked for (meant for nothing).
  const strays: PlannedStray[] = Array.from({ length: Math.max(4, Math.round(shape.payments / 50)) }, (_, n) => {
    const family = familyOf(rng);
    return { n, family, org: rng.int(0, orgCount - 1), atMs: rng.int(0, spreadMs + 60_000), currency: rng.pick(CURRENCIES_OF[family]), hundredths: rng.int(1, 10_000) };
  });
  // Chain clocks: half the runs' families within a few seconds, the others behind or ahead by up to 2 × S.
  const lagOf = (family: Family) => {
    const twoS = 2 * shape.skewSeconds[family];
    return rng.chance(0.5) ? rng.int(-4, 4) : rng.chance(0.5) ? rng.int(5, twoS) : -rng.int(5, twoS);
  };
  // solana-local stamps its blocks with the machine's clock (it has no clock offset to set).
  const chainLagSeconds = { evm: lagOf('evm'), tron: lagOf('tron'), solana: 0 };
  return { seed, payments: planned + strays.length, spreadMs, chainLagSeconds, strays, orgs, orders, deposits, faults, refunds: planRefunds(orders, rng.fork('refunds')) };
}

/** Refunds of some orders that complete, from their own stream (a fork draws nothing from the scenario's). */
export function planRefunds(orders: readonly PlannedOrder[], rng: Rng): PlannedRefund[] {
  const eligible = orders.filter((o) => REFUNDABLE_KINDS.includes(o.kind));
  const rate = eligible.length === 0 ? 0 : Math.min(0.3, (MAX_REFUNDS * 0.8) / eligible.length);
  const refunds: PlannedRefund[] = [];
  for (const o of eligible) {
    if (refunds.length >= MAX_REFUNDS || !rng.chance(rate)) continue;
    const behaviour = rng.weighted(REFUND_BEHAVIOUR_WEIGHTS);
    refunds.push({
      n: refunds.length,
      order: o.n,
      behaviour,
      issueAfterMs: rng.int(1_000, 10_000),
      claimAfterMs: rng.int(1_000, 5_000),
      approveAfterMs: rng.int(2_000, 6_000),
      payAfterMs: behaviour === 'late' ? rng.int(40_000, 90_000) : rng.int(2_000, 8_000),
      firstPartPpm: rng.int(200_000, 800_000),
      restAfterMs: rng.int(8_000, 30_000),
    });
  }
  return refunds;
}
