-- Issue 42, second slice: Stablegate watches the chain for the merchant's refund (or payout)
-- payment. An approved refund's destination is a second kind of watched address: a transfer of the
-- refund's token into it is recorded as a row of `transfers` with refund_id set (so the
-- confirmations job, reorg handling and the transfer list serve it as they serve every transfer),
-- never with an order or a deposit binding: it is never read as an incoming payment. `counted`
-- says whether it pays the refund (its token, mined after the approval by the evidence of the
-- looks); refunds.amount_paid sums the counted ones that are not dropped.
ALTER TABLE "transfers" ADD COLUMN "refund_id" text REFERENCES "refunds"("id");
--> statement-breakpoint
CREATE INDEX "transfers_refund_idx" ON "transfers" ("refund_id") WHERE "refund_id" IS NOT NULL;
--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "amount_paid" numeric(78, 0) DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- The destinations the scanner watches: approved refunds, by chain and destination.
CREATE INDEX "refunds_watched_destination_idx" ON "refunds" ("chain_id", "destination") WHERE "status" = 'approved';
