-- The hosted payment page's URL token (/pay/<token>): 128 random bits in base64url, so the URL
-- cannot be guessed from an order id. Existing orders get one here; new orders get theirs in the
-- creation statement. pgcrypto's gen_random_bytes, not gen_random_uuid() (only 122 random bits).
CREATE EXTENSION IF NOT EXISTS pgcrypto;--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "pay_token" text;--> statement-breakpoint
UPDATE "orders" SET "pay_token" = rtrim(translate(encode(gen_random_bytes(16), 'base64'), '+/', '-_'), '=');--> statement-breakpoint
ALTER TABLE "orders" ALTER COLUMN "pay_token" SET NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "orders_pay_token_uq" ON "orders" USING btree ("pay_token");
