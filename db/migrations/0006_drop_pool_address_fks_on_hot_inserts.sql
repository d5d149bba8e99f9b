-- Order creation writes the id of the pool row its own statement has just taken (updated and locked);
-- deposit bindings likewise; pool rows are never deleted. The two checks could never fail and cost
-- about a tenth of the creation statement's Postgres time (issue 20), as 0001 found for organizations.
ALTER TABLE "address_assignments" DROP CONSTRAINT "address_assignments_pool_address_id_pool_addresses_id_fk";
--> statement-breakpoint
ALTER TABLE "orders" DROP CONSTRAINT "orders_pool_address_id_pool_addresses_id_fk";
