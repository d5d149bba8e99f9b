-- The block-timestamp witness of attribution (issue 39, core/detection/clock-witness.ts): each look
-- at a chain's head keeps the timestamp of the block it saw, so the service can measure how the
-- chain's clock sits against its own; a transfer keeps the window its block's timestamp placed its
-- mining in, where the chain's consensus ties timestamps to wall-clock slots. Null: no timestamp
-- (a pushed head, a row from before this migration) or no witness (off for the chain, or not
-- established around the block).
ALTER TABLE "chain_head_observations" ADD COLUMN "block_timestamp" timestamptz;
--> statement-breakpoint
ALTER TABLE "transfers" ADD COLUMN "clock_mined_after" timestamptz;
--> statement-breakpoint
ALTER TABLE "transfers" ADD COLUMN "clock_mined_by" timestamptz;
