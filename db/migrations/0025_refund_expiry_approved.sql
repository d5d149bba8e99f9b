-- Issue 42: now that Stablegate watches refund destinations, an approved refund (or payout) can
-- expire too: when its expiresAt has passed, nothing counted was paid toward it (amount_paid = 0)
-- and its chain has been scanned past expiresAt (core/refunds/refunds.ts refundExpires). The
-- expiry job's index covers approved refunds as well.
DROP INDEX IF EXISTS "refunds_expiring_idx";
--> statement-breakpoint
CREATE INDEX "refunds_expiring_idx" ON "refunds" ("expires_at") WHERE "status" IN ('requested', 'awaiting_claim', 'claimed', 'approved');
