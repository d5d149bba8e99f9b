-- Time partitioning of the webhook history (issue 31): events, webhook deliveries and attempts
-- become tables partitioned by ranges of their ULID ids, one partition a month. A ULID starts with
-- its creation time, so `id_at(prefix, t)` (the smallest id made at t) turns a month into an id
-- range and a lookup by id prunes to one partition without a time column. The three tables share
-- one time axis, the event's: a delivery's id carries its event's time (core/webhooks/relay.ts),
-- and attempts are partitioned by their delivery's id, so an event, its deliveries and their
-- attempts always sit in partitions of the same month, and the month is dropped as a whole
-- (core/maintenance/history-partitions.ts). No DEFAULT partition: partitions are detached
-- concurrently, which a DEFAULT partition would forbid.
--
-- Nothing is copied: the existing tables are renamed and attached as the "before partitioning"
-- partition of each table (ids below the cut-over, a little after this migration), the new
-- partitions take every id from the cut-over on. The lock this takes is held for the renames, the
-- new tables and one scan of each old table's ids by ATTACH (its partition constraint); the old
-- indexes are reused as the partitions' indexes, nothing is rebuilt.

-- Every lock first, in the order running writers take them (a row's table, then the tables its
-- foreign keys check): taken one by one later, a writer holding webhook_attempts while it checks
-- webhook_deliveries would deadlock with this migration.
LOCK TABLE "organizations", "webhook_endpoints" IN SHARE ROW EXCLUSIVE MODE;
--> statement-breakpoint
LOCK TABLE "webhook_attempts", "webhook_deliveries", "events" IN ACCESS EXCLUSIVE MODE;
--> statement-breakpoint
-- The smallest id of a ULID-keyed table made at `at`: `<prefix>_<10 time chars>0000000000000000`,
-- Crockford base32 in lower case, as core/maintenance/history-retention.ts idAt.
CREATE FUNCTION "id_at"("prefix" text, "at" timestamptz) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  ms bigint := greatest(0, floor(extract(epoch FROM "at") * 1000))::bigint;
  chars text := '';
BEGIN
  FOR i IN 1..10 LOOP
    chars := substr('0123456789abcdefghjkmnpqrstvwxyz', (ms % 32)::int + 1, 1) || chars;
    ms := ms / 32;
  END LOOP;
  RETURN "prefix" || '_' || chars || '0000000000000000';
END $$;
--> statement-breakpoint
-- One month (or any period) of the history: a partition of each table for ids made in [from, to),
-- named <table>_<suffix>. Deliveries' (event, endpoint) uniqueness lives in each partition (a
-- unique index of the parent would have to hold the partition key): an event's deliveries share
-- its partition, so it holds across the table. Called by this migration and by the
-- history-partitions job; creating a partition that exists is a no-op.
CREATE FUNCTION "create_history_partition"("from_at" timestamptz, "to_at" timestamptz, "suffix" text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF "events" FOR VALUES FROM (%L) TO (%L)',
    'events_' || suffix, id_at('evt', from_at), id_at('evt', to_at));
  EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF "webhook_deliveries" FOR VALUES FROM (%L) TO (%L)',
    'webhook_deliveries_' || suffix, id_at('whd', from_at), id_at('whd', to_at));
  EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %I ("event_id", "endpoint_id")',
    'webhook_deliveries_' || suffix || '_event_endpoint_uq', 'webhook_deliveries_' || suffix);
  EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF "webhook_attempts" FOR VALUES FROM (%L) TO (%L)',
    'webhook_attempts_' || suffix, id_at('whd', from_at), id_at('whd', to_at));
END $$;
--> statement-breakpoint
-- The old tables, their indexes and constraints take the "before partitioning" names.
ALTER TABLE "events" RENAME TO "events_before_partitioning";
--> statement-breakpoint
ALTER INDEX "events_pkey" RENAME TO "events_before_partitioning_pkey";
--> statement-breakpoint
ALTER INDEX "events_org_created_idx" RENAME TO "events_before_partitioning_org_created_idx";
--> statement-breakpoint
ALTER INDEX "events_undispatched_idx" RENAME TO "events_before_partitioning_undispatched_idx";
--> statement-breakpoint
ALTER INDEX "events_alerts_idx" RENAME TO "events_before_partitioning_alerts_idx";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" RENAME TO "webhook_deliveries_before_partitioning";
--> statement-breakpoint
ALTER INDEX "webhook_deliveries_pkey" RENAME TO "webhook_deliveries_before_partitioning_pkey";
--> statement-breakpoint
ALTER INDEX "webhook_deliveries_due_idx" RENAME TO "webhook_deliveries_before_partitioning_due_idx";
--> statement-breakpoint
ALTER INDEX "webhook_deliveries_event_endpoint_uq" RENAME TO "webhook_deliveries_before_partitioning_event_endpoint_uq";
--> statement-breakpoint
ALTER TABLE "webhook_attempts" RENAME TO "webhook_attempts_before_partitioning";
--> statement-breakpoint
ALTER INDEX "webhook_attempts_pkey" RENAME TO "webhook_attempts_before_partitioning_pkey";
--> statement-breakpoint
ALTER INDEX "webhook_attempts_delivery_idx" RENAME TO "webhook_attempts_before_partitioning_delivery_idx";
--> statement-breakpoint
-- Foreign keys between partitioned tables would make every detach check the referencing table;
-- the three tables' rows of one period are dropped together instead (see above).
ALTER TABLE "webhook_deliveries_before_partitioning" DROP CONSTRAINT "webhook_deliveries_event_id_events_id_fk";
--> statement-breakpoint
ALTER TABLE "webhook_attempts_before_partitioning" DROP CONSTRAINT "webhook_attempts_delivery_id_webhook_deliveries_id_fk";
--> statement-breakpoint
CREATE TABLE "events" (
  "id" text NOT NULL,
  "organization_id" text NOT NULL,
  "type" text NOT NULL,
  "data" jsonb NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "dispatched_at" timestamp with time zone,
  "target_endpoint_id" text,
  CONSTRAINT "events_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "events_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id")
) PARTITION BY RANGE ("id");
--> statement-breakpoint
CREATE INDEX "events_org_created_idx" ON "events" USING btree ("organization_id", "created_at");
--> statement-breakpoint
CREATE INDEX "events_undispatched_idx" ON "events" USING btree ("created_at") WHERE "dispatched_at" IS NULL;
--> statement-breakpoint
CREATE INDEX "events_alerts_idx" ON "events" USING btree ("created_at") WHERE "type" LIKE 'alert.%';
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
  "id" text NOT NULL,
  "organization_id" text NOT NULL,
  "event_id" text NOT NULL,
  "endpoint_id" text NOT NULL,
  "status" text DEFAULT 'pending' NOT NULL,
  "attempt_count" integer DEFAULT 0 NOT NULL,
  "retry_base" integer DEFAULT 0 NOT NULL,
  "next_attempt_at" timestamp with time zone,
  "last_attempt_at" timestamp with time zone,
  "delivered_at" timestamp with time zone,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "webhook_deliveries_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id"),
  CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id")
) PARTITION BY RANGE ("id");
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE "status" = 'pending';
--> statement-breakpoint
-- Partitioned by the delivery's id (no primary key: one would have to hold delivery_id; ids come
-- from the identity sequence, and the old table's primary key stays on its partition).
CREATE TABLE "webhook_attempts" (
  "id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
  "delivery_id" text NOT NULL,
  "attempt_number" integer NOT NULL,
  "started_at" timestamp with time zone NOT NULL,
  "duration_ms" integer,
  "status_code" integer,
  "error" text,
  "response_excerpt" text,
  "outcome" text NOT NULL
) PARTITION BY RANGE ("delivery_id");
--> statement-breakpoint
CREATE INDEX "webhook_attempts_delivery_idx" ON "webhook_attempts" USING btree ("delivery_id");
--> statement-breakpoint
-- The new table's identity goes on from the old one's.
SELECT setval(pg_get_serial_sequence('"webhook_attempts"', 'id'), coalesce((SELECT max("id") FROM "webhook_attempts_before_partitioning"), 0) + 1, false);
--> statement-breakpoint
ALTER TABLE "webhook_attempts_before_partitioning" ALTER COLUMN "id" DROP IDENTITY;
--> statement-breakpoint
-- Attached below a cut-over ten minutes ahead: a row a process still running the previous version
-- writes meanwhile (it may have resolved the old table before this lock) still fits.
DO $$
DECLARE
  cutover timestamptz := date_trunc('minute', now()) + interval '10 minutes';
  month_start timestamptz;
BEGIN
  EXECUTE format('ALTER TABLE "events" ATTACH PARTITION "events_before_partitioning" FOR VALUES FROM (MINVALUE) TO (%L)', id_at('evt', cutover));
  EXECUTE format('ALTER TABLE "webhook_deliveries" ATTACH PARTITION "webhook_deliveries_before_partitioning" FOR VALUES FROM (MINVALUE) TO (%L)', id_at('whd', cutover));
  EXECUTE format('ALTER TABLE "webhook_attempts" ATTACH PARTITION "webhook_attempts_before_partitioning" FOR VALUES FROM (MINVALUE) TO (%L)', id_at('whd', cutover));
  -- The rest of this month, then the next three (the history-partitions job keeps three ahead).
  month_start := date_trunc('month', cutover AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  PERFORM create_history_partition(cutover, month_start + interval '1 month', to_char(month_start AT TIME ZONE 'UTC', '"p"YYYYMM'));
  FOR i IN 1..3 LOOP
    PERFORM create_history_partition(month_start + make_interval(months => i), month_start + make_interval(months => i + 1),
      to_char((month_start + make_interval(months => i)) AT TIME ZONE 'UTC', '"p"YYYYMM'));
  END LOOP;
END $$;
