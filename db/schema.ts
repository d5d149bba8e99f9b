import { sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  bigint,
  boolean,
  customType,
  date,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

/** Token amounts in base units: numeric(78,0) in Postgres, bigint in code, never a float. */
export const baseUnits = customType<{ data: bigint; driverData: string }>({
  dataType: () => 'numeric(78, 0)',
  toDriver: (value) => value.toString(),
  fromDriver: (value) => BigInt(value),
});

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const createdAt = () => ts('created_at').notNull().defaultNow();

// ---------------------------------------------------------------------------
// Tenancy, keys, configuration
// ---------------------------------------------------------------------------

export const organizations = pgTable('organizations', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** Shown to payers beside the name: an e-mail address or an http(s) URL; null shows none (migration 0022). */
  supportContact: text('support_contact'),
  createdAt: createdAt(),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    name: text('name').notNull(),
    role: text('role').notNull().$type<'owner' | 'admin' | 'member' | 'viewer'>(),
    /** SHA-256 of the key, hex. The key itself is never stored. */
    keyHash: text('key_hash').notNull(),
    /** First characters of the key, for people to tell keys apart. */
    keyPrefix: text('key_prefix').notNull(),
    createdAt: createdAt(),
    revokedAt: ts('revoked_at'),
  },
  (t) => [uniqueIndex('api_keys_key_hash_uq').on(t.keyHash), index('api_keys_org_idx').on(t.organizationId)],
);

export const organizationConfig = pgTable(
  'organization_config',
  {
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    key: text('key').notNull(),
    value: jsonb('value').notNull(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.key] })],
);

export const idempotencyRecords = pgTable(
  'idempotency_records',
  {
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    state: text('state').notNull().$type<'in_progress' | 'completed'>(),
    responseStatus: integer('response_status'),
    responseBody: jsonb('response_body'),
    createdAt: createdAt(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.key] }), index('idempotency_expires_idx').on(t.expiresAt)],
);

/** Service-wide facts that survive restarts (local chain genesis, deployed token addresses). */
export const serviceState = pgTable('service_state', {
  key: text('key').primaryKey(),
  value: jsonb('value').notNull(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

// ---------------------------------------------------------------------------
// Event outbox (design.md §6): written in the transaction of the state change.
// ---------------------------------------------------------------------------

/**
 * Events, webhook deliveries and attempts are partitioned by month on ranges of their ULID ids
 * (db/migrations/0014, core/maintenance/history-partitions.ts): a delivery's id carries its
 * event's time and attempts follow their delivery's id, so the three rows of one event share a
 * month. The (event, endpoint) uniqueness of deliveries is an index of each partition, and the
 * three tables have no foreign keys to each other (a month of each is dropped together).
 */
export const events = pgTable(
  'events',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    type: text('type').notNull(),
    data: jsonb('data').notNull(),
    createdAt: createdAt(),
    /** Set once the event has been fanned out to delivery rows. */
    dispatchedAt: ts('dispatched_at'),
    /** Targeted mode (webhook.test): delivered to this one endpoint only, whatever its subscriptions. */
    targetEndpointId: text('target_endpoint_id'),
  },
  (t) => [
    index('events_org_created_idx').on(t.organizationId, t.createdAt),
    index('events_undispatched_idx').on(t.createdAt).where(sql`${t.dispatchedAt} is null`),
    // The alert e-mail job finds new alert events through this (core/alerts/alert-emails.ts).
    index('events_alerts_idx').on(t.createdAt).where(sql`${t.type} like 'alert.%'`),
    // An order's events, by their data's orderId (0013_order_reference_search.sql).
    index('events_order_idx').on(sql`(${t.data}->>'orderId')`).where(sql`${t.data} ? 'orderId'`),
  ],
);

// ---------------------------------------------------------------------------
// Address pool and assignments (design.md §4)
// ---------------------------------------------------------------------------

export const poolAddresses = pgTable(
  'pool_addresses',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    protocol: text('protocol').notNull().$type<'evm' | 'tron' | 'solana'>(),
    address: text('address').notNull(),
    mode: text('mode').notNull().$type<'hd_wallet' | 'self_managed' | 'derived'>(),
    derivationIndex: integer('derivation_index'),
    masterPublicKey: text('master_public_key'),
    status: text('status').notNull().$type<'available' | 'allocated' | 'bound' | 'cooldown'>().default('available'),
    cooldownUntil: ts('cooldown_until'),
    recycledAt: ts('recycled_at'),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    // An address belongs to one organization: matching a transfer to its owner is unambiguous.
    uniqueIndex('pool_addresses_protocol_address_uq').on(t.protocol, t.address),
    // Allocation order (spec): never-used by creation time, then recycled by recycled_at.
    index('pool_addresses_allocation_idx')
      .on(t.organizationId, t.protocol, sql`${t.recycledAt} asc nulls first`, t.createdAt, t.id)
      .where(sql`${t.status} = 'available'`),
    index('pool_addresses_cooldown_idx').on(t.cooldownUntil).where(sql`${t.status} = 'cooldown'`),
    index('pool_addresses_org_status_idx').on(t.organizationId, t.protocol, t.status),
  ],
);

export const addressAssignments = pgTable(
  'address_assignments',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    // No foreign keys, as on orders (see there): the allocation statements write the id of the
    // pool row they have just updated (core/pool/allocation.ts), and pool rows are never deleted.
    poolAddressId: bigint('pool_address_id', { mode: 'number' }).notNull(),
    organizationId: text('organization_id').notNull(),
    kind: text('kind').notNull().$type<'order' | 'deposit'>(),
    orderId: text('order_id'),
    depositBindingId: text('deposit_binding_id'),
    startedAt: ts('started_at').notNull(),
    endedAt: ts('ended_at'),
    /**
     * Per chain of the address's family: the highest block the scanner had recorded when this
     * assignment began (informational; attribution reads chain_head_observations).
     */
    headsSeen: jsonb('heads_seen').$type<Record<string, number>>().notNull().default({}),
  },
  (t) => [
    // The database itself forbids an address being held twice at once.
    uniqueIndex('address_assignments_one_open_uq').on(t.poolAddressId).where(sql`${t.endedAt} is null`),
    index('address_assignments_address_time_idx').on(t.poolAddressId, t.startedAt),
  ],
);

/** Per organization and protocol: whether the low-pool alert is currently raised. */
export const poolAlertState = pgTable(
  'pool_alert_state',
  {
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    protocol: text('protocol').notNull(),
    alerted: boolean('alerted').notNull().default(false),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.protocol] })],
);

// ---------------------------------------------------------------------------
// Orders
// ---------------------------------------------------------------------------

/** A route a USD order offers its payer: a token on a chain. */
export interface OrderRouteOffer {
  currency: string;
  chainId: string;
}

/** A route a USD order was given (core/orders/routes.ts): payments to its address in its token count. */
export interface ChosenOrderRoute extends OrderRouteOffer {
  protocol: 'evm' | 'tron' | 'solana';
  address: string;
  poolAddressId: number;
  requiredConfirmations: number;
  chosenAt: string;
  /** Counted, not dropped, in base units of the route's token (kept by recomputeOrder). */
  received: string;
}

export const orders = pgTable(
  'orders',
  {
    id: text('id').primaryKey(),
    // No foreign key to organizations: every order insert would take a KEY SHARE lock on its
    // organization's one row, and concurrent creations for one merchant then queue on that row
    // (MultiXacts; a quarter of the creation statement's cost at 8 at once). The id comes from
    // the authenticated caller and organizations are never deleted.
    organizationId: text('organization_id').notNull(),
    orderReference: text('order_reference').notNull(),
    /** The hosted payment page's URL token: 128 random bits, base64url (never the order id). */
    payToken: text('pay_token').notNull(),
    amount: baseUnits('amount').notNull(),
    amountReceived: baseUnits('amount_received').notNull().default(sql`0`),
    /** The token's symbol, or USD for an order priced in dollars whose payer picks the route (0026_usd_orders.sql). */
    currency: text('currency').notNull(),
    /** A USD order's are its current route's, null until one is chosen (core/orders/routes.ts). */
    chainId: text('chain_id'),
    protocol: text('protocol'),
    address: text('address'),
    // No foreign key to pool_addresses either: order creation writes the id of the pool row its
    // own statement has just taken (updated and locked), and pool rows are never deleted, so the
    // check could never fail; run as a trigger per order and per assignment, the two checks were
    // about a tenth of the creation statement's time in Postgres (issue 20).
    poolAddressId: bigint('pool_address_id', { mode: 'number' }),
    status: text('status').notNull().$type<'pending' | 'completed' | 'expired'>().default('pending'),
    successUrl: text('success_url'),
    cancelUrl: text('cancel_url'),
    metadata: jsonb('metadata').notNull().default({}),
    /**
     * The payment link the order was made from (checkout only; 0018_order_payment_link.sql). Its
     * insert takes one of the link's units (trigger payment_link_take_unit); completion sells it and
     * expiry returns it (core/orders/link-units.ts). metadata.paymentLinkId is information only.
     * The foreign key costs plain orders nothing (null) and a link order no extra wait: the unit
     * trigger locks the link's row anyway.
     */
    paymentLinkId: text('payment_link_id').references((): AnyPgColumn => paymentLinks.id),
    paymentWindowMinutes: integer('payment_window_minutes').notNull(),
    graceMinutes: integer('grace_minutes').notNull(),
    requiredConfirmations: integer('required_confirmations').notNull(),
    expiresAt: ts('expires_at').notNull(),
    graceEndsAt: ts('grace_ends_at').notNull(),
    txHash: text('tx_hash'),
    blockNumber: bigint('block_number', { mode: 'number' }),
    confirmations: integer('confirmations'),
    completedAt: ts('completed_at'),
    expiredAt: ts('expired_at'),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    /**
     * How it was completed (0021_reconciliation.sql): automatic (by its detected payments) or manual
     * (a merchant's decision: a payment attributed by hand, or settled by hand, with who, when and
     * why). Null while pending, when expired, and for orders completed before 0021 (automatic).
     */
    resolution: text('resolution').$type<'automatic' | 'manual'>(),
    resolvedBy: text('resolved_by'),
    resolvedAt: ts('resolved_at'),
    resolutionReason: text('resolution_reason'),
    /** Expired with a late-payment window: payments to its address until then are recorded against it (paid_late). */
    lateWindowEndsAt: ts('late_window_ends_at'),
    /** The first payment seen to its address after its grace ended (paidLate). */
    latePaidAt: ts('late_paid_at'),
    /** Transfers to its address during or just after its life left unattributed that name it as a candidate. */
    unattributedPayments: integer('unattributed_payments').notNull().default(0),
    /**
     * Its refunds not cancelled or expired, in base units of its token (0023_refunds.sql): kept by
     * the refund operations under this row's lock; a refund never takes it past amountReceived.
     */
    amountRefunded: baseUnits('amount_refunded').notNull().default(sql`0`),
    /** A USD order: the routes offered to its payer; null for a token order (0026_usd_orders.sql). */
    routes: jsonb('routes').$type<OrderRouteOffer[]>(),
    /** A USD order: every route it was given, in the order chosen (the current one is chain_id + route_currency). */
    chosenRoutes: jsonb('chosen_routes').$type<ChosenOrderRoute[]>(),
    /** A USD order: the token of its current route (currency stays USD). */
    routeCurrency: text('route_currency'),
  },
  (t) => [
    uniqueIndex('orders_org_reference_uq').on(t.organizationId, t.orderReference),
    uniqueIndex('orders_pay_token_uq').on(t.payToken),
    // The list's orders, id last (its tie-break): a page's ids come from the index alone (0016_list_counts.sql).
    index('orders_org_created_idx').on(t.organizationId, t.createdAt, t.id),
    index('orders_org_status_created_idx').on(t.organizationId, t.status, t.createdAt, t.id),
    index('orders_pending_grace_idx').on(t.graceEndsAt).where(sql`${t.status} = 'pending'`),
    // Orders made from a payment link (its counters, amounts collected, the foreign key's checks).
    index('orders_payment_link_idx').on(t.paymentLinkId).where(sql`${t.paymentLinkId} is not null`),
    // Substring search of references (ILIKE '%…%'): trigrams (0013_order_reference_search.sql, pg_trgm).
    index('orders_reference_trgm_idx').using('gin', sql`${t.orderReference} gin_trgm_ops`),
    // The orders that need attention (?exception=…), newest first (0021_reconciliation.sql).
    index('orders_org_exception_idx')
      .on(t.organizationId, t.createdAt, t.id)
      .where(
        sql`${t.latePaidAt} is not null or ${t.unattributedPayments} > 0 or ${t.resolution} = 'manual' or (${t.status} = 'completed' and ${t.amountReceived} < ${t.amount})`,
      ),
  ],
);

/**
 * Exact counts of an organization's orders and transfers per status and UTC day of created_at, kept
 * by statement triggers in the writing transaction (0016_list_counts.sql): a row per (organization,
 * status, day, slot), slot the writing backend's process id (0: folded, core/maintenance/list-counts.ts);
 * the count is the sum.
 */
function listCounts(name: string) {
  return pgTable(
    name,
    {
      organizationId: text('organization_id').notNull(),
      status: text('status').notNull(),
      day: date('day', { mode: 'string' }).notNull(),
      slot: integer('slot').notNull(),
      n: bigint('n', { mode: 'number' }).notNull(),
    },
    (t) => [primaryKey({ columns: [t.organizationId, t.status, t.day, t.slot] })],
  );
}
export const orderCounts = listCounts('order_counts');
export const transferCounts = listCounts('transfer_counts');

// ---------------------------------------------------------------------------
// Deposit references (bindings) and deposits
// ---------------------------------------------------------------------------

/** One reference bound to one pool address of one protocol family. */
export const depositBindings = pgTable(
  'deposit_bindings',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    depositReference: text('deposit_reference').notNull(),
    protocol: text('protocol').notNull(),
    poolAddressId: bigint('pool_address_id', { mode: 'number' }).notNull().references(() => poolAddresses.id),
    address: text('address').notNull(),
    metadata: jsonb('metadata').notNull().default({}),
    createdAt: createdAt(),
    unboundAt: ts('unbound_at'),
  },
  (t) => [
    uniqueIndex('deposit_bindings_open_uq')
      .on(t.organizationId, t.depositReference, t.protocol)
      .where(sql`${t.unboundAt} is null`),
    index('deposit_bindings_org_ref_idx').on(t.organizationId, t.depositReference),
  ],
);

/** Description B registers a reference per (currency, chain); all share the family's binding. */
export const depositBindingChains = pgTable(
  'deposit_binding_chains',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    bindingId: text('binding_id').notNull().references(() => depositBindings.id),
    chainId: text('chain_id').notNull(),
    currency: text('currency').notNull(),
    createdAt: createdAt(),
    removedAt: ts('removed_at'),
  },
  (t) => [uniqueIndex('deposit_binding_chains_open_uq').on(t.bindingId, t.chainId).where(sql`${t.removedAt} is null`)],
);

// ---------------------------------------------------------------------------
// Chain monitoring: transfers, checkpoints, deposits
// ---------------------------------------------------------------------------

/**
 * One candidate of an unattributed transfer as stored (transfers.unattributed_candidates):
 * `possible` for an undecidable one (an assignment the evidence could not rule out), `previous` /
 * `next` for a no_holder one (the holder that ended last before the block, the one that began next).
 */
export interface StoredTransferCandidate {
  kind: 'order' | 'deposit';
  relation: 'possible' | 'previous' | 'next';
  assignmentId: number;
  orderId: string | null;
  depositBindingId: string | null;
  depositReference: string | null;
  heldFrom: string;
  heldUntil: string | null;
}

export const transfers = pgTable(
  'transfers',
  {
    id: text('id').primaryKey(),
    chainId: text('chain_id').notNull(),
    protocol: text('protocol').notNull(),
    currency: text('currency').notNull(),
    tokenAddress: text('token_address').notNull(),
    amount: baseUnits('amount').notNull(),
    fromAddress: text('from_address').notNull(),
    toAddress: text('to_address').notNull(),
    txHash: text('tx_hash').notNull(),
    /**
     * Identity with (chain, tx hash): the transfer's position within its transaction (EVM: among
     * the configured tokens' Transfer logs of the transaction; Tron: log index in the transaction;
     * Solana: instruction index). Survives the transaction being re-mined elsewhere.
     */
    indexInTx: integer('index_in_tx').notNull(),
    /** Position of the log in its block (EVM log index): data, not identity. */
    logIndex: integer('log_index').notNull(),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    blockHash: text('block_hash').notNull(),
    blockTimestamp: ts('block_timestamp').notNull(),
    confirmations: integer('confirmations').notNull().default(0),
    /**
     * Confirmations it needs, decided once (migration 0010): its order's or its deposit's when
     * attributed, the chain's order confirmations when recorded unattributed. Null only for
     * unattributed rows recorded before 0010 (the confirmations job uses the chain's count for them).
     */
    requiredConfirmations: integer('required_confirmations'),
    /** reorged: confirmed, then its block left the chain deeper than the confirmations (credit kept). */
    status: text('status').notNull().$type<'pending' | 'confirmed' | 'dropped' | 'reorged'>().default('pending'),
    organizationId: text('organization_id').references(() => organizations.id),
    poolAddressId: bigint('pool_address_id', { mode: 'number' }).references(() => poolAddresses.id),
    assignmentId: bigint('assignment_id', { mode: 'number' }).references(() => addressAssignments.id),
    orderId: text('order_id').references(() => orders.id),
    depositBindingId: text('deposit_binding_id').references(() => depositBindings.id),
    /** Counted toward its order (right chain, token and time window). */
    counted: boolean('counted').notNull().default(false),
    credited: boolean('credited').notNull().default(false),
    detectedAt: createdAt(),
    confirmedAt: ts('confirmed_at'),
    droppedAt: ts('dropped_at'),
    /**
     * The evidence attribution used (core/detection/attribution.ts): the block was mined after
     * mined_after (the last time the service saw the chain's head below it; null: never) and by
     * mined_by (the first time it saw a head at or past it).
     */
    minedAfter: ts('mined_after'),
    minedBy: ts('mined_by'),
    /**
     * The block-timestamp witness (core/detection/clock-witness.ts): the window its timestamp put the
     * block's mining in, as measured against the service's looks; null where it was off or not
     * established.
     */
    clockMinedAfter: ts('clock_mined_after'),
    clockMinedBy: ts('clock_mined_by'),
    /** Why it is attributed to nobody (no_holder | undecidable); null when attributed. */
    unattributedReason: text('unattributed_reason').$type<'no_holder' | 'undecidable' | 'paid_late'>(),
    /**
     * Who it could have been meant for, kept when it is recorded unattributed (migration 0020,
     * core/detection/attribution.ts unattributedCandidates); null when attributed or recorded
     * before 0020. Evidence only: nothing is credited from it.
     */
    unattributedCandidates: jsonb('unattributed_candidates').$type<StoredTransferCandidate[]>(),
    /**
     * A manual attribution (POST /transfers/:id/attribute, 0021_reconciliation.sql): who, when and
     * why; null when the detection attributed it (or nobody did). The evidence above stays as recorded.
     */
    attributedBy: text('attributed_by'),
    attributedAt: ts('attributed_at'),
    attributionReason: text('attribution_reason'),
    /**
     * A payment into an approved refund's (or payout's) destination (0024_refund_payments.sql): the
     * merchant paying it from its own wallet. Never attributed to an order or a deposit.
     */
    refundId: text('refund_id').references((): AnyPgColumn => refunds.id),
  },
  (t) => [
    // Re-scanning is harmless: one live row per transfer identity. A dropped row does not block a re-mined one.
    uniqueIndex('transfers_chain_tx_index_live_uq')
      .on(t.chainId, t.txHash, t.indexInTx)
      .where(sql`${t.status} <> 'dropped'`),
    index('transfers_pending_idx').on(t.chainId, t.blockNumber).where(sql`${t.status} = 'pending'`),
    index('transfers_order_idx').on(t.orderId),
    index('transfers_org_detected_idx').on(t.organizationId, t.detectedAt, t.id),
    index('transfers_org_status_detected_idx').on(t.organizationId, t.status, t.detectedAt, t.id),
    index('transfers_tx_idx').on(t.txHash),
    // An order's unattributed payments, by its address (0021_reconciliation.sql).
    index('transfers_refund_idx').on(t.refundId).where(sql`${t.refundId} is not null`),
    index('transfers_unattributed_address_idx')
      .on(t.poolAddressId, t.detectedAt)
      .where(sql`${t.orderId} is null and ${t.depositBindingId} is null`),
  ],
);

export const deposits = pgTable(
  'deposits',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    bindingId: text('binding_id').notNull().references(() => depositBindings.id),
    depositReference: text('deposit_reference').notNull(),
    transferId: text('transfer_id').notNull().references(() => transfers.id),
    status: text('status').notNull().$type<'pending' | 'confirmed' | 'completed' | 'dropped'>().default('pending'),
    requiredConfirmations: integer('required_confirmations').notNull(),
    detectedAt: createdAt(),
    confirmedAt: ts('confirmed_at'),
    completedAt: ts('completed_at'),
    droppedAt: ts('dropped_at'),
  },
  (t) => [
    uniqueIndex('deposits_transfer_uq').on(t.transferId),
    index('deposits_org_ref_idx').on(t.organizationId, t.depositReference),
    index('deposits_org_detected_idx').on(t.organizationId, t.detectedAt),
  ],
);

/** How far each chain has been scanned. Orders never expire past what was scanned. */
export const chainCheckpoints = pgTable('chain_checkpoints', {
  chainId: text('chain_id').primaryKey(),
  blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
  blockHash: text('block_hash').notNull(),
  blockTimestamp: ts('block_timestamp').notNull(),
  /** Highest head block the scanner has seen (the clock-skew rule records it on assignments). */
  headNumber: bigint('head_number', { mode: 'number' }),
  headSeenAt: ts('head_seen_at'),
  /** When a scan run of the chain last completed (core/detection/scan.ts): what /health and the stall watch judge. */
  scannedAt: ts('scanned_at'),
  /** When the last scan attempt failed because no provider answered (cleared by a success). */
  providersFailingSince: ts('providers_failing_since'),
  /** The current stall episode (alert.chain_stalled sent once when it began), or null. */
  stalledSince: ts('stalled_since'),
  stallReason: text('stall_reason'),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

/**
 * What the service saw of each chain's head (core/detection/head-observations.ts): per height, the
 * block seen there, the first time it learnt that block existed and the last time a provider still
 * answered the height as the head. Attribution's evidence of when a block was mined.
 */
export const chainHeadObservations = pgTable(
  'chain_head_observations',
  {
    chainId: text('chain_id').notNull(),
    headNumber: bigint('head_number', { mode: 'number' }).notNull(),
    /** The block seen at that height (null: recorded before migration 0015, proves nothing of minedBy). */
    blockHash: text('block_hash'),
    firstSeenAt: ts('first_seen_at').notNull(),
    lastSeenAt: ts('last_seen_at').notNull(),
    /** The seen block's timestamp (null: the look did not tell, e.g. a pushed head): the clock witness's samples. */
    blockTimestamp: ts('block_timestamp'),
  },
  (t) => [
    primaryKey({ name: 'chain_head_observations_pk', columns: [t.chainId, t.headNumber] }),
    index('chain_head_observations_last_seen_idx').on(t.chainId, t.lastSeenAt),
  ],
);

/** Recent scanned block hashes per chain, to find the fork point after a reorg. */
export const scannedBlocks = pgTable(
  'scanned_blocks',
  {
    chainId: text('chain_id').notNull(),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    blockHash: text('block_hash').notNull(),
    parentHash: text('parent_hash').notNull(),
    blockTimestamp: ts('block_timestamp').notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.blockNumber] })],
);

// ---------------------------------------------------------------------------
// Webhooks (design.md §6)
// ---------------------------------------------------------------------------

export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    url: text('url').notNull(),
    events: text('events').array().notNull(),
    /** AES-256-GCM ciphertext of the signing secret (core/platform/secrets.ts). */
    secretCiphertext: text('secret_ciphertext').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    disabledReason: text('disabled_reason'),
    failingSince: ts('failing_since'),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [index('webhook_endpoints_org_idx').on(t.organizationId)],
);

export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    eventId: text('event_id').notNull(),
    endpointId: text('endpoint_id').notNull().references(() => webhookEndpoints.id),
    status: text('status').notNull().$type<'pending' | 'succeeded' | 'failed'>().default('pending'),
    attemptCount: integer('attempt_count').notNull().default(0),
    /** attempt_count when the delivery was last (re)started by hand: the retry schedule restarts there. */
    retryBase: integer('retry_base').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at'),
    lastAttemptAt: ts('last_attempt_at'),
    deliveredAt: ts('delivered_at'),
    createdAt: createdAt(),
  },
  (t) => [
    // Unique (event_id, endpoint_id): an index of each partition (create_history_partition), not of the parent.
    index('webhook_deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
  ],
);

export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    /** Identity, unique but no primary key: the partition key (delivery_id) would have to be in it. */
    id: bigint('id', { mode: 'number' }).notNull().generatedAlwaysAsIdentity(),
    deliveryId: text('delivery_id').notNull(),
    attemptNumber: integer('attempt_number').notNull(),
    startedAt: ts('started_at').notNull(),
    /** Null for an interrupted attempt: nobody saw it end. */
    durationMs: integer('duration_ms'),
    statusCode: integer('status_code'),
    error: text('error'),
    responseExcerpt: text('response_excerpt'),
    /** interrupted: the worker stopped mid-attempt; recorded when the delivery is next claimed. */
    outcome: text('outcome').notNull().$type<'succeeded' | 'failed' | 'interrupted'>(),
  },
  (t) => [index('webhook_attempts_delivery_idx').on(t.deliveryId)],
);

// ---------------------------------------------------------------------------
// Alert e-mails: one row per alert event (from the outbox), sent by the alert-email job.
// ---------------------------------------------------------------------------

export const alertEmails = pgTable(
  'alert_emails',
  {
    eventId: text('event_id').primaryKey(),
    organizationId: text('organization_id').notNull(),
    status: text('status').notNull().$type<'pending' | 'sent' | 'failed' | 'rate_limited' | 'no_recipients'>().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at'),
    /** The addresses it went to (the organization's alerts.email when it was sent). */
    recipients: text('recipients'),
    lastError: text('last_error'),
    sentAt: ts('sent_at'),
    createdAt: createdAt(),
  },
  (t) => [
    index('alert_emails_due_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
    index('alert_emails_org_sent_idx').on(t.organizationId, t.sentAt),
  ],
);

/**
 * An address of an organization's alerts.email and whether it agreed (issue 32): alert e-mails go
 * only to confirmed ones. One confirmation e-mail per row (its link carries the token, stored
 * hashed); the row stays when the address leaves the list.
 */
export const alertRecipients = pgTable(
  'alert_recipients',
  {
    organizationId: text('organization_id').notNull(),
    email: text('email').notNull(),
    tokenHash: text('token_hash'),
    confirmationSentAt: ts('confirmation_sent_at'),
    confirmedAt: ts('confirmed_at'),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationId, t.email] }),
    uniqueIndex('alert_recipients_token_hash_idx').on(t.tokenHash),
    index('alert_recipients_email_sent_idx').on(t.email, t.confirmationSentAt),
  ],
);

// ---------------------------------------------------------------------------
// The merchant dashboard (issue 29): people, memberships, sessions, one-time links, audit log.
// ---------------------------------------------------------------------------

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull(),
    /** scrypt$N$r$p$salt$hash (core/users/passwords.ts); null until the user sets one. */
    passwordHash: text('password_hash'),
    passwordChangedAt: ts('password_changed_at'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('users_email_uq').using('btree', sql`lower(${t.email})`)],
);

export const memberships = pgTable(
  'memberships',
  {
    userId: text('user_id').notNull().references(() => users.id),
    organizationId: text('organization_id').notNull().references(() => organizations.id),
    role: text('role').notNull().$type<'owner' | 'admin' | 'member' | 'viewer'>(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ name: 'memberships_pk', columns: [t.userId, t.organizationId] }), index('memberships_org_idx').on(t.organizationId)],
);

export const userSessions = pgTable(
  'user_sessions',
  {
    /** SHA-256 of the session cookie's value: a database read never yields a usable session. */
    idHash: text('id_hash').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id),
    /** The organization the user is acting in (switchable among their memberships). */
    organizationId: text('organization_id').notNull(),
    csrfToken: text('csrf_token').notNull(),
    ip: text('ip'),
    createdAt: createdAt(),
    lastSeenAt: ts('last_seen_at').notNull().defaultNow(),
    /** The absolute end, whatever the activity. */
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [index('user_sessions_user_idx').on(t.userId)],
);

export const signInLinks = pgTable(
  'sign_in_links',
  {
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id),
    purpose: text('purpose').notNull().$type<'sign-in' | 'invitation'>(),
    expiresAt: ts('expires_at').notNull(),
    usedAt: ts('used_at'),
    createdAt: createdAt(),
  },
  (t) => [index('sign_in_links_user_idx').on(t.userId)],
);

export const auditLog = pgTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    /** Null for events of no organization (a failed sign-in of an unknown e-mail is not recorded). */
    organizationId: text('organization_id'),
    userId: text('user_id'),
    /** Who, as people read it: the user's e-mail, or "operator" for the admin CLI. */
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    target: text('target'),
    detail: jsonb('detail'),
    ip: text('ip'),
    createdAt: createdAt(),
  },
  (t) => [index('audit_log_org_created_idx').on(t.organizationId, t.createdAt)],
);

// ---------------------------------------------------------------------------
// Payment links (issue 28). An order made from a link (orders.payment_link_id) takes one unit (or
// fails) in its own insert (trigger of 0018_order_payment_link.sql); leaving pending sells it or
// returns it (core/orders/link-units.ts).
// ---------------------------------------------------------------------------

export const paymentLinks = pgTable(
  'payment_links',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id').notNull(),
    slug: text('slug').notNull(),
    title: text('title').notNull(),
    description: text('description'),
    /** The wire's decimal string ("0": the payer chooses, within minAmount/maxAmount). */
    amount: text('amount').notNull(),
    minAmount: text('min_amount'),
    maxAmount: text('max_amount'),
    currencies: jsonb('currencies').notNull().$type<{ currency: string; chainId: string }[]>(),
    /** USD: priced in dollars, its checkout makes USD orders whose payer picks one of `currencies` (0026_usd_orders.sql); null: token units. */
    priceCurrency: text('price_currency').$type<'USD'>(),
    inventoryTotal: integer('inventory_total'),
    maxOpenOrders: integer('max_open_orders'),
    expiresAt: ts('expires_at'),
    metadata: jsonb('metadata').notNull().default({}),
    successUrl: text('success_url'),
    cancelUrl: text('cancel_url'),
    status: text('status').notNull().$type<'draft' | 'active' | 'archived'>().default('draft'),
    inventoryReserved: integer('inventory_reserved').notNull().default(0),
    inventorySold: integer('inventory_sold').notNull().default(0),
    ordersCreated: integer('orders_created').notNull().default(0),
    publishedAt: ts('published_at'),
    archivedAt: ts('archived_at'),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('payment_links_slug_uq').on(t.slug), index('payment_links_org_created_idx').on(t.organizationId, t.createdAt)],
);

// ---------------------------------------------------------------------------
// Refunds and payouts without custody (issue 42, 0023_refunds.sql): an expected outgoing payment
// the merchant makes from its own wallet to a destination the payer gives on a claim page.
// ---------------------------------------------------------------------------
export const REFUND_STATUSES = ['requested', 'awaiting_claim', 'claimed', 'approved', 'completed', 'expired', 'cancelled'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];
export const REFUND_KINDS = ['refund', 'payout'] as const;
export type RefundKind = (typeof REFUND_KINDS)[number];

export const refunds = pgTable(
  'refunds',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id').notNull(),
    /** refund: returns an order, a deposit reference's deposits or a transfer; payout: none. */
    kind: text('kind').notNull().$type<RefundKind>().default('refund'),
    orderId: text('order_id').references(() => orders.id),
    depositReference: text('deposit_reference'),
    transferId: text('transfer_id').references(() => transfers.id),
    /** Base units of its token. */
    amount: baseUnits('amount').notNull(),
    currency: text('currency').notNull(),
    chainId: text('chain_id').notNull(),
    protocol: text('protocol').notNull().$type<'evm' | 'tron' | 'solana'>(),
    /** The token contract (mint on Solana) when it was issued: what the payment and the export name. */
    tokenAddress: text('token_address').notNull(),
    reason: text('reason').notNull(),
    status: text('status').notNull().$type<RefundStatus>(),
    /** The claim page's URL token: 128 random bits, base64url (never the refund id). */
    claimToken: text('claim_token').notNull(),
    /** Given by the payer on the claim page, in the family's normalised form. */
    destination: text('destination'),
    requestedBy: text('requested_by').notNull(),
    issuedBy: text('issued_by'),
    issuedAt: ts('issued_at'),
    claimedAt: ts('claimed_at'),
    approvedAt: ts('approved_at'),
    approvedBy: text('approved_by'),
    cancelledAt: ts('cancelled_at'),
    cancelledBy: text('cancelled_by'),
    expiresAt: ts('expires_at').notNull(),
    expiredAt: ts('expired_at'),
    /** The payment that completed it (next slice: the detection core watching the destination). */
    txHash: text('tx_hash'),
    completedAt: ts('completed_at'),
    /** What its counted payments that are not dropped add up to, pending and confirmed (0024). */
    amountPaid: baseUnits('amount_paid').notNull().default(sql`0`),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('refunds_claim_token_uq').on(t.claimToken),
    index('refunds_watched_destination_idx').on(t.chainId, t.destination).where(sql`${t.status} = 'approved'`),
    index('refunds_org_created_idx').on(t.organizationId, t.createdAt, t.id),
    index('refunds_order_idx').on(t.orderId).where(sql`${t.orderId} is not null`),
    index('refunds_deposit_reference_idx').on(t.organizationId, t.depositReference).where(sql`${t.depositReference} is not null`),
    index('refunds_transfer_idx').on(t.transferId).where(sql`${t.transferId} is not null`),
    index('refunds_expiring_idx').on(t.expiresAt).where(sql`${t.status} in ('requested', 'awaiting_claim', 'claimed', 'approved')`),
    index('refunds_org_status_idx').on(t.organizationId, t.status, t.createdAt),
  ],
);
