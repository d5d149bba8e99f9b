-- When a chain's scan last completed (issue 37): the outcome /health and the stall watch judge,
-- whatever stopped the scans (workers down, job schedulers lost with Redis's keys, every run
-- failing). Null for a chain not scanned since this migration: judged by its head and checkpoint
-- only until its next scan.
ALTER TABLE "chain_checkpoints" ADD COLUMN "scanned_at" timestamptz;
