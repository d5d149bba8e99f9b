-- The hash of the block each head observation saw (core/detection/head-observations.ts): an
-- observation is proof that a block was mined by first_seen_at only if the block it saw is on the
-- chain the transfer is on. Before a range is recorded, the scan compares the observation that
-- would decide a transfer's minedBy with the canonical block at its height and forgets one seen on
-- an orphaned branch. Null for rows recorded before this migration: they prove nothing about
-- minedBy (their last_seen_at still bounds minedAfter).
ALTER TABLE "chain_head_observations" ADD COLUMN "block_hash" text;
