-- Two lookups of the merchant dashboard (issue 29) that read every row of an organization.
-- The order list's reference search is a case-insensitive substring match (GET /orders?orderReference=,
-- the dashboard's search box): without an index it read every order of the organization. A trigram
-- GIN index answers ILIKE '%…%' for terms of three characters or more (pg_trgm is a trusted
-- extension: the database owner may create it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "orders_reference_trgm_idx" ON "orders" USING gin ("order_reference" gin_trgm_ops);
--> statement-breakpoint
-- An order's events (its completion or expiry) on the dashboard's order page, by their data's orderId.
CREATE INDEX IF NOT EXISTS "events_order_idx" ON "events" USING btree (("data"->>'orderId')) WHERE "data" ? 'orderId';
