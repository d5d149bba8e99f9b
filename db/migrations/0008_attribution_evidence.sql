-- Attribution by what the service observed of each chain (issue 25, design.md §4b). Each row is one
-- head height the service was told about: when it first learnt that the height existed (an answer
-- received, or a pushed head) and the last time a provider still answered it as the head (the
-- request's send time). A block b was mined after the last time a head below b was seen, and by
-- the first time a head at or past b was seen: the evidence attribution compares with the times
-- an address was handed over.
CREATE TABLE "chain_head_observations" (
  "chain_id" text NOT NULL,
  "head_number" bigint NOT NULL,
  "first_seen_at" timestamp with time zone NOT NULL,
  "last_seen_at" timestamp with time zone NOT NULL,
  CONSTRAINT "chain_head_observations_pk" PRIMARY KEY ("chain_id", "head_number")
);
--> statement-breakpoint
CREATE INDEX "chain_head_observations_last_seen_idx" ON "chain_head_observations" ("chain_id", "last_seen_at");
--> statement-breakpoint
-- The evidence each transfer was attributed on, and why one stayed unattributed.
ALTER TABLE "transfers" ADD COLUMN "mined_after" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "transfers" ADD COLUMN "mined_by" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "transfers" ADD COLUMN "unattributed_reason" text;
