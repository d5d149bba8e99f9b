-- Which payment link an order was made from is a column set only by checkout (issue 38). It was
-- metadata.paymentLinkId, which the unit triggers of 0011 read: a plain POST /orders whose
-- metadata named one of the merchant's links took a unit of it, counted toward its sales and
-- could sell it out. The key stays in a checkout order's metadata as information only.
--
-- The backfill keeps the orders checkout made (their orderReference is "<link id>/…", and the link
-- is of the same organization); an order that only named the link in metadata leaves the link's
-- counters, with what the old triggers counted for it (one order, one unit reserved while
-- pending, one sold if completed).
--
-- Cost: the ALTER holds writers of orders from here to the commit; the backfill reads only the
-- link orders (through the old partial index), the new index is one scan of the table, and the
-- foreign key's check reads the new partial index (only link orders have a value).

-- orders first, then payment_links: the order in which order writes reach links (the insert's
-- unit trigger, completion and expiry).
ALTER TABLE "orders" ADD COLUMN "payment_link_id" text;
--> statement-breakpoint
UPDATE "orders" o SET "payment_link_id" = l."id"
  FROM "payment_links" l
  WHERE o."metadata" ? 'paymentLinkId' AND l."id" = o."metadata"->>'paymentLinkId'
    AND l."organization_id" = o."organization_id" AND starts_with(o."order_reference", l."id" || '/');
--> statement-breakpoint
UPDATE "payment_links" l
  SET "inventory_reserved" = l."inventory_reserved" - s."pending",
      "inventory_sold" = l."inventory_sold" - s."completed",
      "orders_created" = l."orders_created" - s."made"
  FROM (
    SELECT "organization_id", "metadata"->>'paymentLinkId' AS "link_id", count(*) AS "made",
      count(*) FILTER (WHERE "status" = 'pending') AS "pending", count(*) FILTER (WHERE "status" = 'completed') AS "completed"
    FROM "orders"
    WHERE "metadata" ? 'paymentLinkId' AND "payment_link_id" IS NULL
    GROUP BY 1, 2
  ) s
  WHERE l."id" = s."link_id" AND l."organization_id" = s."organization_id";
--> statement-breakpoint
DROP INDEX "orders_payment_link_idx";
--> statement-breakpoint
CREATE INDEX "orders_payment_link_idx" ON "orders" USING btree ("payment_link_id") WHERE "payment_link_id" IS NOT NULL;
--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_payment_link_id_payment_links_id_fk" FOREIGN KEY ("payment_link_id") REFERENCES "public"."payment_links"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
-- Taking a unit stays in the order's insert (core/orders/orders.ts createOrder, from checkout): the
-- creation is one statement, batched, without a transaction around it, and the insert decides
-- (no check-then-insert race across API processes): it locks the link's row and takes a unit, or
-- fails the whole statement. A link of another organization is refused like an unknown one.
CREATE OR REPLACE FUNCTION "payment_link_take_unit"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  link record;
BEGIN
  SELECT status, inventory_total, inventory_reserved, inventory_sold, max_open_orders INTO link
    FROM payment_links
    WHERE id = NEW.payment_link_id AND organization_id = NEW.organization_id
    FOR UPDATE;
  IF NOT FOUND OR link.status <> 'active' THEN
    RAISE EXCEPTION 'payment link % is not active', NEW.payment_link_id USING ERRCODE = 'SGL03';
  END IF;
  IF link.inventory_total IS NOT NULL AND link.inventory_reserved + link.inventory_sold >= link.inventory_total THEN
    RAISE EXCEPTION 'payment link % is sold out', NEW.payment_link_id USING ERRCODE = 'SGL01';
  END IF;
  IF link.max_open_orders IS NOT NULL AND link.inventory_reserved >= link.max_open_orders THEN
    RAISE EXCEPTION 'payment link % has its maximum of open orders', NEW.payment_link_id USING ERRCODE = 'SGL02';
  END IF;
  UPDATE payment_links
    SET inventory_reserved = inventory_reserved + 1, orders_created = orders_created + 1
    WHERE id = NEW.payment_link_id;
  RETURN NEW;
END $$;
--> statement-breakpoint
DROP TRIGGER "orders_payment_link_take_unit" ON "orders";
--> statement-breakpoint
CREATE TRIGGER "orders_payment_link_take_unit" BEFORE INSERT ON "orders"
  FOR EACH ROW WHEN (NEW.payment_link_id IS NOT NULL) EXECUTE FUNCTION "payment_link_take_unit"();
--> statement-breakpoint
-- Selling or returning the unit when the order leaves pending is TypeScript now, in the
-- transaction of the transition (core/orders/order-state.ts, finishOrder → settleLinkUnit).
DROP TRIGGER "orders_payment_link_follow_order" ON "orders";
--> statement-breakpoint
DROP FUNCTION "payment_link_follow_order"();
