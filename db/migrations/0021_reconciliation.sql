-- Issue 40: money off the happy path. What the merchant decides by hand and what happened to an
-- order beyond its status, kept on the rows the lists already read (no join for a list page).
--
-- Orders:
--   resolution         'automatic' (completed by its payments as detected), 'manual' (completed by
--                      a merchant's decision: a payment attributed by hand, or settled by hand);
--                      null while pending, for an expired order, and for an order completed
--                      before this migration (presented as automatic: no rewrite of history).
--   resolved_by / resolved_at / resolution_reason: who, when and why, for a manual resolution.
--   late_window_ends_at: set when the order expires in an organization with a late-payment window
--                      (late_payment_window_minutes): until then payments to its address are
--                      recorded against it (paid_late) and the address is not handed out again.
--   late_paid_at       the first payment seen to its address after its grace (paidLate).
--   unattributed_payments: how many transfers to its address during or just after its life were
--                      left unattributed and name it as a candidate (kept by the recording and by
--                      the attribute action; never negative).
-- Transfers: a manual attribution (attributed_by / attributed_at / attribution_reason); the
-- evidence (mined_after, mined_by, unattributed_candidates, unattributed_reason) stays as recorded.
ALTER TABLE "orders" ADD COLUMN "resolution" text;
--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "resolved_by" text;
--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "resolved_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "resolution_reason" text;
--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "late_window_ends_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "late_paid_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "unattributed_payments" integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- The "needs attention" orders (?exception=paidLate|unattributedPayments|manual|underpaid), newest
-- first per organization: a small partial index instead of a scan of every order.
CREATE INDEX "orders_org_exception_idx" ON "orders" ("organization_id", "created_at", "id")
  WHERE "late_paid_at" IS NOT NULL OR "unattributed_payments" > 0 OR "resolution" = 'manual'
     OR ("status" = 'completed' AND "amount_received" < "amount");
--> statement-breakpoint
ALTER TABLE "transfers" ADD COLUMN "attributed_by" text;
--> statement-breakpoint
ALTER TABLE "transfers" ADD COLUMN "attributed_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "transfers" ADD COLUMN "attribution_reason" text;
--> statement-breakpoint
-- An order's unattributed payments (its view and page): the unattributed transfers into its
-- address, few and rarely asked, by a small partial index.
CREATE INDEX "transfers_unattributed_address_idx" ON "transfers" ("pool_address_id", "created_at") WHERE "order_id" IS NULL AND "deposit_binding_id" IS NULL;
