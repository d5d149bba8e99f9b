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
--    Each backend adds to rows of its own (slot = its process id): writers never wait on each other's counter rows and cannot
--    deadlock on them, whatever order their statements touch organizations in. A count is the sum
--    of the (few) slots; core/maintenance/list-counts.ts folds them into slot 0 now and then.
--    Statement triggers with transition tables: a bulk insert adds one row per (organization,
--    status), not one per row; an update that moves no row between (organization, status) writes
--    nothing. (A trigger with transition tables cannot be limited to some columns.)
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
-- Rows leaving (old_rows) count -1, rows arriving (new_rows) +1, per (organization, status, day) into
-- this backend's slot; nothing is written where they cancel (an update that kept the status).
-- Sorted, so one statement takes its counter rows in a fixed order.
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
  ELSE
    INSERT INTO "order_counts" ("organization_id", "status", "day", "slot", "n")
    SELECT "organization_id", "status", "day", pg_backend_pid(), sum(d) FROM (
      SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date AS "day", 1 AS d FROM new_rows
      UNION ALL SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date, -1 FROM old_rows
    ) moved GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
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
  ELSE
    INSERT INTO "transfer_counts" ("organization_id", "status", "day", "slot", "n")
    SELECT "organization_id", "status", "day", pg_backend_pid(), sum(d) FROM (
      SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date AS "day", 1 AS d FROM new_rows WHERE "organization_id" IS NOT NULL
      UNION ALL SELECT "organization_id", "status", ("created_at" AT TIME ZONE 'UTC')::date, -1 FROM old_rows WHERE "organization_id" IS NOT NULL
    ) moved GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT ("organization_id", "status", "day", "slot") DO UPDATE SET "n" = "transfer_counts"."n" + excluded."n";
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "orders_count_insert" AFTER INSERT ON "orders" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "order_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "orders_count_update" AFTER UPDATE ON "orders" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "order_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "orders_count_delete" AFTER DELETE ON "orders" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "order_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "transfers_count_insert" AFTER INSERT ON "transfers" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "transfer_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "transfers_count_update" AFTER UPDATE ON "transfers" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "transfer_counts_apply"();
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
