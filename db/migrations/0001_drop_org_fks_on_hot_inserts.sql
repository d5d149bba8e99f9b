ALTER TABLE "address_assignments" DROP CONSTRAINT "address_assignments_organization_id_organizations_id_fk";
--> statement-breakpoint
ALTER TABLE "orders" DROP CONSTRAINT "orders_organization_id_organizations_id_fk";
