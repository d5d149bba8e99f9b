CREATE TABLE "alert_emails" (
	"event_id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"recipients" text,
	"last_error" text,
	"sent_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "alert_emails_due_idx" ON "alert_emails" USING btree ("next_attempt_at") WHERE "alert_emails"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "alert_emails_org_sent_idx" ON "alert_emails" USING btree ("organization_id","sent_at");--> statement-breakpoint
CREATE INDEX "events_alerts_idx" ON "events" USING btree ("created_at") WHERE "events"."type" like 'alert.%';