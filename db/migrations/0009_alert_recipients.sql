-- Alert recipients must agree (issue 32): an address in alerts.email receives alert e-mails only
-- once it has confirmed through the link of its one confirmation e-mail. A row per organization and
-- address, kept when the address leaves the list (its confirmation history rate-limits re-adding).
CREATE TABLE "alert_recipients" (
	"organization_id" text NOT NULL,
	"email" text NOT NULL,
	"token_hash" text,
	"confirmation_sent_at" timestamp with time zone,
	"confirmed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "alert_recipients_organization_id_email_pk" PRIMARY KEY("organization_id","email")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "alert_recipients_token_hash_idx" ON "alert_recipients" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "alert_recipients_email_sent_idx" ON "alert_recipients" USING btree ("email","confirmation_sent_at");--> statement-breakpoint
-- Addresses configured before: unconfirmed, so each gets its confirmation e-mail like a new one.
INSERT INTO "alert_recipients" ("organization_id", "email")
SELECT DISTINCT c."organization_id", btrim(a)
  FROM "organization_config" c, unnest(string_to_array(c."value" #>> '{}', ',')) AS a
 WHERE c."key" = 'alerts.email' AND jsonb_typeof(c."value") = 'string' AND btrim(a) <> ''
ON CONFLICT DO NOTHING;
