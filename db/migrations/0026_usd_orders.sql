-- Issue 41: orders priced in USD whose payer picks the route (token and network). Such an order
-- has no address until a route is chosen (POST /orders/:id/route or its payment page), so its
-- chain, protocol, address and pool address are null until then; afterwards they are the current
-- route's. Its currency is 'USD' and its amounts are in USD base units of 18 decimals (every route
-- token has at most 18, so a payment in any of them is counted exactly).
-- routes: the routes offered, [{currency, chainId}]; chosen_routes: every route the order was given,
-- with its address, pool address, confirmations and what it received (core/orders/routes.ts).
-- A token order (today's form) has both null and is unchanged.
ALTER TABLE "orders" ALTER COLUMN "chain_id" DROP NOT NULL;
--> statement-breakpoint
ALTER TABLE "orders" ALTER COLUMN "protocol" DROP NOT NULL;
--> statement-breakpoint
ALTER TABLE "orders" ALTER COLUMN "address" DROP NOT NULL;
--> statement-breakpoint
ALTER TABLE "orders" ALTER COLUMN "pool_address_id" DROP NOT NULL;
--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "routes" jsonb;
--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "chosen_routes" jsonb;
--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "route_currency" text;
--> statement-breakpoint
ALTER TABLE "payment_links" ADD COLUMN "price_currency" text;
