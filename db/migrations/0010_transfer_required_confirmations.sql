-- Required confirmations decided once per transfer (issue 26): stored when the transfer is
-- attributed (its order's, fixed at the order's creation; its deposit's, fixed when the deposit is
-- recorded) or recorded unattributed (the chain's order confirmations at that time); the
-- confirmations job, the deposit state code and the transfer presenter read this column.
ALTER TABLE "transfers" ADD COLUMN "required_confirmations" integer;--> statement-breakpoint
UPDATE "transfers" t SET "required_confirmations" = o."required_confirmations"
  FROM "orders" o WHERE o."id" = t."order_id";--> statement-breakpoint
UPDATE "transfers" t SET "required_confirmations" = d."required_confirmations"
  FROM "deposits" d WHERE d."transfer_id" = t."id" AND t."required_confirmations" IS NULL;
-- Unattributed rows recorded before this migration stay null: the chain's count lives in the
-- service's chain table, not in the database; the confirmations job confirms them at it.
