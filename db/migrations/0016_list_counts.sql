-- GET /orders and GET /transfers at a year of a busy merchant (issue 31, bench:scale). The
-- pagination contract answers an exact total (pagination.total, totalPages): counting it read
-- every matching row of the organization on every request, and an offset page read every row
-- before it. Hence:
--
-- 1. Exact counts per (organization, status, UTC day of created_at), kept by statement triggers
--    in the transaction of the write (so a count is as committed as the rows it counts). A total
--    sums an organization's days; an offset page deep in the list (in created_at order) finds the
--    day it starts in from the days' counts and skips only the rest of the offset within that day
--    (core/platform/list-counts.ts), so its cost is bounded by a day's rows, not by the offset.
--    Each backend adds to rows of its own (slot = its process id): writers never wait on each
--    other's counter rows and cannot deadlock on them, whatever order their statements touch
--    organizations in. A count is the sum of the (few) slots; core/maintenance/list-counts.ts
--    folds them into slot 0 now and then.
--    Inserts and deletes: statement triggers with transition tables (a bulk insert adds one row
--    per organization, status and day, not one per row). Updates: a row trigger that fires only
--    when a row changes status (or organization): a statement trigger would run on every update
--    (transition tables cannot be limited to columns), confirmations and amounts included.
-- 2. The lists' indexes end with id (the tie-break): a page's ids are read by an index-only scan
--    (the offset skipped in the index, not the table), and the status filter has an index of its
--    own in the same order.
--
-- The counts are seeded from the rows here, under a lock that holds writers of the two tables
-- back for the count and the index builds.

-- transfers first: a payment's writer records its transfer, then credits the order.
LOCK TABLE "transfers", "orders" IN SHARE ROW EXCLUSIVE MODE;
--> statement-breakpoint
CREATE TABLE "order_counts" (
  "organization_id" text NOT NULL,
  "status" text NOT NULL,
  "day" date NOT NULL,
  "slot" integer NOT NULL,
  "n" bigint NOT NULL,
  PRIMARY KEY ("organization_id", "status", "day", "slot")
);
--> statement-breakpoint
CREATE TABLE "transfer_counts" (
  "organization_id" text NOT NULL,
  "status" text NOT NULL,
  "day" date NOT NULL,
  "slot" integer NOT NULL,
  "n" bigint NOT NULL,
  PRIMARY KEY ("organization_id", "status", "day", "slot")
);
--> statement-breakpoint
INSERT INTO "order_counts" ("organization_id", "status", "day", "slot", "n")
SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date, 0, count(*) FROM "orders" GROUP BY 1, 2, 3;
--> statement-breakpoint
INSERT INTO "transfer_counts" ("organization_id", "status", "day", "slot", "n")
SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date, 0, count(*) FROM "transfers" WHERE "organization_id" IS NOT NULL GROUP BY 1, 2, 3;
--> statement-breakpoint
-- Rows inserted count +1, rows deleted -1, per (organization, status, day) into this backend's
-- slot. Sorted, so one statement takes its counter rows in a fixed order.
CREATE FUNCTION "order_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO "order_counts" ("organization_id", "status", "day", "slot", "n")
    SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date, pg_backend_pid(), count(*) FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT ("organization_id", "status", "day", "slot") DO UPDATE SET "n" = "order_counts"."n" + excluded."n";
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO "order_counts" ("organization_id", "status", "day", "slot", "n")
    SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date, pg_backend_pid(), -count(*) FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT ("organization_id", "status", "day", "slot") DO UPDATE SET "n" = "order_counts"."n" + excluded."n";
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "transfer_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO "transfer_counts" ("organization_id", "status", "day", "slot", "n")
    SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date, pg_backend_pid(), count(*) FROM new_rows WHERE "organization_id" IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT ("organization_id", "status", "day", "slot") DO UPDATE SET "n" = "transfer_counts"."n" + excluded."n";
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO "transfer_counts" ("organization_id", "status", "day", "slot", "n")
    SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date, pg_backend_pid(), -count(*) FROM old_rows WHERE "organization_id" IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT ("organization_id", "status", "day", "slot") DO UPDATE SET "n" = "transfer_counts"."n" + excluded."n";
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- An update that moves a row to another (organization, status, day): -1 where it was, +1 where it
-- is, a row trigger only on such updates (most updates, confirmations or amounts, cost nothing).
CREATE FUNCTION "order_counts_move"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "order_counts" ("organization_id", "status", "day", "slot", "n")
  SELECT * FROM (VALUES
    (OLD."organization_id", OLD."status", (OLD."created_at" AT TIME ZONE 'UTC')::date, pg_backend_pid(), -1),
    (NEW."organization_id", NEW."status", (NEW."created_at" AT TIME ZONE 'UTC')::date, pg_backend_pid(), 1)
  ) moved ("organization_id", "status", "day", "slot", "n") ORDER BY 1, 2, 3
  ON CONFLICT ("organization_id", "status", "day", "slot") DO UPDATE SET "n" = "order_counts"."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "transfer_counts_move"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "transfer_counts" ("organization_id", "status", "day", "slot", "n")
  SELECT * FROM (VALUES
    (OLD."organization_id", OLD."status", (OLD."created_at" AT TIME ZONE 'UTC')::date, pg_backend_pid(), -1),
    (NEW."organization_id", NEW."status", (NEW."created_at" AT TIME ZONE 'UTC')::date, pg_backend_pid(), 1)
  ) moved ("organization_id", "status", "day", "slot", "n") WHERE "organization_id" IS NOT NULL ORDER BY 1, 2, 3
  ON CONFLICT ("organization_id", "status", "day", "slot") DO UPDATE SET "n" = "transfer_counts"."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "orders_count_insert" AFTER INSERT ON "orders" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "order_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "orders_count_update" AFTER UPDATE OF "status", "organization_id", "created_at" ON "orders" FOR EACH ROW
  WHEN (OLD."status" IS DISTINCT FROM NEW."status" OR OLD."organization_id" IS DISTINCT FROM NEW."organization_id"
        OR (OLD."created_at" AT TIME ZONE 'UTC')::date <> (NEW."created_at" AT TIME ZONE 'UTC')::date)
  EXECUTE FUNCTION "order_counts_move"();
--> statement-breakpoint
CREATE TRIGGER "orders_count_delete" AFTER DELETE ON "orders" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "order_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "transfers_count_insert" AFTER INSERT ON "transfers" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "transfer_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "transfers_count_update" AFTER UPDATE OF "status", "organization_id", "created_at" ON "transfers" FOR EACH ROW
  WHEN (OLD."status" IS DISTINCT FROM NEW."status" OR OLD."organization_id" IS DISTINCT FROM NEW."organization_id"
        OR (OLD."created_at" AT TIME ZONE 'UTC')::date <> (NEW."created_at" AT TIME ZONE 'UTC')::date)
  EXECUTE FUNCTION "transfer_counts_move"();
--> statement-breakpoint
CREATE TRIGGER "transfers_count_delete" AFTER DELETE ON "transfers" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "transfer_counts_apply"();
--> statement-breakpoint
DROP INDEX "orders_org_created_idx";
--> statement-breakpoint
CREATE INDEX "orders_org_created_idx" ON "orders" USING btree ("organization_id", "created_at", "id");
--> statement-breakpoint
CREATE INDEX "orders_org_status_created_idx" ON "orders" USING btree ("organization_id", "status", "created_at", "id");
--> statement-breakpoint
DROP INDEX "transfers_org_detected_idx";
--> statement-breakpoint
CREATE INDEX "transfers_org_detected_idx" ON "transfers" USING btree ("organization_id", "created_at", "id");
--> statement-breakpoint
CREATE INDEX "transfers_org_status_detected_idx" ON "transfers" USING btree ("organization_id", "status", "created_at", "id");
