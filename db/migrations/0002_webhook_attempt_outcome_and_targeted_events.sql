ALTER TABLE "webhook_attempts" ALTER COLUMN "duration_ms" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "target_endpoint_id" text;--> statement-breakpoint
-- Attempts recorded before outcomes existed: a 2xx succeeded, anything else failed.
ALTER TABLE "webhook_attempts" ADD COLUMN "outcome" text NOT NULL DEFAULT 'failed';--> statement-breakpoint
UPDATE "webhook_attempts" SET "outcome" = 'succeeded' WHERE "status_code" BETWEEN 200 AND 299;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ALTER COLUMN "outcome" DROP DEFAULT;
