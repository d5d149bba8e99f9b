DROP INDEX "transfers_chain_tx_log_live_uq";--> statement-breakpoint
ALTER TABLE "address_assignments" ADD COLUMN "heads_seen" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "chain_checkpoints" ADD COLUMN "head_number" bigint;--> statement-breakpoint
ALTER TABLE "chain_checkpoints" ADD COLUMN "head_seen_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "chain_checkpoints" ADD COLUMN "providers_failing_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "chain_checkpoints" ADD COLUMN "stalled_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "chain_checkpoints" ADD COLUMN "stall_reason" text;--> statement-breakpoint
ALTER TABLE "transfers" ADD COLUMN "index_in_tx" integer;--> statement-breakpoint
-- Backfill: the position of each stored transfer among the stored transfers of its transaction,
-- by block log index. Exact when the transaction paid only watched addresses; the recorder also
-- recognises an already recorded transfer by its block hash and block log index, so a rescan of
-- the same block never records a stored transfer twice whatever its backfilled index.
UPDATE "transfers" t SET "index_in_tx" = n.idx FROM (
  SELECT "id", (row_number() OVER (PARTITION BY "chain_id", "tx_hash", "block_hash" ORDER BY "log_index") - 1)::int AS idx FROM "transfers"
) n WHERE n."id" = t."id";--> statement-breakpoint
ALTER TABLE "transfers" ALTER COLUMN "index_in_tx" SET NOT NULL;--> statement-breakpoint
UPDATE "chain_checkpoints" SET "head_number" = "block_number", "head_seen_at" = "updated_at";--> statement-breakpoint
CREATE UNIQUE INDEX "transfers_chain_tx_index_live_uq" ON "transfers" USING btree ("chain_id","tx_hash","index_in_tx") WHERE "transfers"."status" <> 'dropped';
