-- The merchant dashboard (issue 29): people who sign in, their memberships of organizations
-- (the API keys' four roles), server-side sessions, one-time sign-in and invitation links, and the
-- audit log of security-relevant and settings changes. Secrets are stored only as hashes: a
-- password as scrypt with its own salt, a session id and a one-time link as SHA-256.
CREATE TABLE "users" (
  "id" text PRIMARY KEY NOT NULL,
  "email" text NOT NULL,
  "password_hash" text,
  "password_changed_at" timestamp with time zone,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_uq" ON "users" USING btree (lower("email"));
--> statement-breakpoint
CREATE TABLE "memberships" (
  "user_id" text NOT NULL REFERENCES "users"("id"),
  "organization_id" text NOT NULL REFERENCES "organizations"("id"),
  "role" text NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT "memberships_pk" PRIMARY KEY ("user_id", "organization_id")
);
--> statement-breakpoint
CREATE INDEX "memberships_org_idx" ON "memberships" USING btree ("organization_id");
--> statement-breakpoint
CREATE TABLE "user_sessions" (
  "id_hash" text PRIMARY KEY NOT NULL,
  "user_id" text NOT NULL REFERENCES "users"("id"),
  "organization_id" text NOT NULL,
  "csrf_token" text NOT NULL,
  "ip" text,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
  "expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "user_sessions_user_idx" ON "user_sessions" USING btree ("user_id");
--> statement-breakpoint
CREATE TABLE "sign_in_links" (
  "token_hash" text PRIMARY KEY NOT NULL,
  "user_id" text NOT NULL REFERENCES "users"("id"),
  "purpose" text NOT NULL,
  "expires_at" timestamp with time zone NOT NULL,
  "used_at" timestamp with time zone,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "sign_in_links_user_idx" ON "sign_in_links" USING btree ("user_id");
--> statement-breakpoint
CREATE TABLE "audit_log" (
  "id" text PRIMARY KEY NOT NULL,
  "organization_id" text,
  "user_id" text,
  "actor" text NOT NULL,
  "action" text NOT NULL,
  "target" text,
  "detail" jsonb,
  "ip" text,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "audit_log_org_created_idx" ON "audit_log" USING btree ("organization_id", "created_at");
