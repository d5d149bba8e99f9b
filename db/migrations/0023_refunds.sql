-- Issue 42 (first slice): refunds and payouts without custody. A refund is an expected outgoing
-- payment the merchant makes from its own wallet: amount (base units of its token), token, chain,
-- and a destination the payer gives on a public claim page (claim_token, 128 random bits).
--
-- One table for refunds and payouts (kind): both are the same expected outgoing payment with the
-- same claim, approval, export and (next slice) watching of the destination; a payout only has no
-- order, deposit reference or transfer it returns.
--
-- A refund returns exactly one of: an order (order_id), a deposit reference (deposit_reference,
-- its confirmed deposits in the refund's token), or an unattributed transfer (transfer_id).
-- status: requested (asked by a Member, waiting for an Admin/Owner to issue it) → awaiting_claim →
-- claimed (destination given) → approved (the merchant will pay it) → completed (paid: the next
-- slice, with tx_hash and completed_at); or expired (not claimed before expires_at) or cancelled.
CREATE TABLE "refunds" (
  "id" text PRIMARY KEY NOT NULL,
  "organization_id" text NOT NULL,
  "kind" text DEFAULT 'refund' NOT NULL,
  "order_id" text REFERENCES "orders"("id"),
  "deposit_reference" text,
  "transfer_id" text REFERENCES "transfers"("id"),
  "amount" numeric(78, 0) NOT NULL,
  "currency" text NOT NULL,
  "chain_id" text NOT NULL,
  "protocol" text NOT NULL,
  "token_address" text NOT NULL,
  "reason" text NOT NULL,
  "status" text NOT NULL,
  "claim_token" text NOT NULL,
  "destination" text,
  "requested_by" text NOT NULL,
  "issued_by" text,
  "issued_at" timestamp with time zone,
  "claimed_at" timestamp with time zone,
  "approved_at" timestamp with time zone,
  "approved_by" text,
  "cancelled_at" timestamp with time zone,
  "cancelled_by" text,
  "expires_at" timestamp with time zone NOT NULL,
  "expired_at" timestamp with time zone,
  "tx_hash" text,
  "completed_at" timestamp with time zone,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT "refunds_amount_positive" CHECK ("amount" > 0),
  CONSTRAINT "refunds_one_source" CHECK (
    ("kind" = 'refund' AND num_nonnulls("order_id", "deposit_reference", "transfer_id") = 1)
    OR ("kind" = 'payout' AND num_nonnulls("order_id", "deposit_reference", "transfer_id") = 0)
  )
);
--> statement-breakpoint
CREATE UNIQUE INDEX "refunds_claim_token_uq" ON "refunds" ("claim_token");
--> statement-breakpoint
-- GET /refunds: an organization's, newest first (filter by status on the same index).
CREATE INDEX "refunds_org_created_idx" ON "refunds" ("organization_id", "created_at", "id");
--> statement-breakpoint
-- GET /refunds?orderId= and an order's refunded total; the sources of deposit and transfer refunds.
CREATE INDEX "refunds_order_idx" ON "refunds" ("order_id") WHERE "order_id" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX "refunds_deposit_reference_idx" ON "refunds" ("organization_id", "deposit_reference") WHERE "deposit_reference" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX "refunds_transfer_idx" ON "refunds" ("transfer_id") WHERE "transfer_id" IS NOT NULL;
--> statement-breakpoint
-- The expiry job: refunds that can still expire, by deadline.
CREATE INDEX "refunds_expiring_idx" ON "refunds" ("expires_at") WHERE "status" IN ('requested', 'awaiting_claim', 'claimed');
--> statement-breakpoint
-- The export of approved refunds (and, next slice, the destinations to watch).
CREATE INDEX "refunds_org_status_idx" ON "refunds" ("organization_id", "status", "created_at");
--> statement-breakpoint
-- What the order's refunds not cancelled or expired add up to (base units of the order's token),
-- kept by the refund operations under the order's row lock: the order's view shows it and a new
-- refund may not take it past amount_received.
ALTER TABLE "orders" ADD COLUMN "amount_refunded" numeric(78, 0) DEFAULT 0 NOT NULL;
