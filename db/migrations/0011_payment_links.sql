-- Payment links (issue 28): a template a payer opens at /l/<slug>; each checkout that proceeds
-- makes a fresh order through the same operation as POST /orders, with the link's id in the order's
-- metadata (paymentLinkId). Amounts are the wire's decimal strings: one link offers tokens of
-- different decimals, each order stores its own base units.
CREATE TABLE "payment_links" (
  "id" text PRIMARY KEY NOT NULL,
  "organization_id" text NOT NULL,
  "slug" text NOT NULL,
  "title" text NOT NULL,
  "description" text,
  "amount" text NOT NULL,
  "min_amount" text,
  "max_amount" text,
  "currencies" jsonb NOT NULL,
  "inventory_total" integer,
  "max_open_orders" integer,
  "expires_at" timestamp with time zone,
  "metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
  "success_url" text,
  "cancel_url" text,
  "status" text DEFAULT 'draft' NOT NULL,
  "inventory_reserved" integer DEFAULT 0 NOT NULL,
  "inventory_sold" integer DEFAULT 0 NOT NULL,
  "orders_created" integer DEFAULT 0 NOT NULL,
  "published_at" timestamp with time zone,
  "archived_at" timestamp with time zone,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "payment_links_slug_uq" ON "payment_links" USING btree ("slug");
--> statement-breakpoint
CREATE INDEX "payment_links_org_created_idx" ON "payment_links" USING btree ("organization_id","created_at");
--> statement-breakpoint
-- A link's orders (counters, amount collected per currency): only orders made from a link are indexed.
CREATE INDEX "orders_payment_link_idx" ON "orders" USING btree (("metadata"->>'paymentLinkId'))
  WHERE "metadata" ? 'paymentLinkId';
--> statement-breakpoint
-- The link's units and open orders are decided by the order insert itself, so no check-then-insert
-- race exists across API processes: the insert of an order carrying paymentLinkId (of a link of the
-- same organization) locks the link's row and takes one unit, or fails the whole statement (no
-- order, no address taken) when the link is not active, every unit is reserved or sold
-- (reserved + sold = inventory_total), or max_open_orders orders are open.
CREATE FUNCTION "payment_link_take_unit"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  link record;
BEGIN
  SELECT status, inventory_total, inventory_reserved, inventory_sold, max_open_orders INTO link
    FROM payment_links
    WHERE id = NEW.metadata->>'paymentLinkId' AND organization_id = NEW.organization_id
    FOR UPDATE;
  IF NOT FOUND THEN
    RETURN NEW;
  END IF;
  IF link.status <> 'active' THEN
    RAISE EXCEPTION 'payment link % is not active', NEW.metadata->>'paymentLinkId' USING ERRCODE = 'SGL03';
  END IF;
  IF link.inventory_total IS NOT NULL AND link.inventory_reserved + link.inventory_sold >= link.inventory_total THEN
    RAISE EXCEPTION 'payment link % is sold out', NEW.metadata->>'paymentLinkId' USING ERRCODE = 'SGL01';
  END IF;
  IF link.max_open_orders IS NOT NULL AND link.inventory_reserved >= link.max_open_orders THEN
    RAISE EXCEPTION 'payment link % has its maximum of open orders', NEW.metadata->>'paymentLinkId' USING ERRCODE = 'SGL02';
  END IF;
  UPDATE payment_links
    SET inventory_reserved = inventory_reserved + 1, orders_created = orders_created + 1
    WHERE id = NEW.metadata->>'paymentLinkId';
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER "orders_payment_link_take_unit" BEFORE INSERT ON "orders"
  FOR EACH ROW WHEN (NEW.metadata ? 'paymentLinkId') EXECUTE FUNCTION "payment_link_take_unit"();
--> statement-breakpoint
-- An open (pending) order holds a reserved unit; completion sells it; expiry returns it. Kept by the
-- order's own status change, in its transaction, whichever code path changes it.
CREATE FUNCTION "payment_link_follow_order"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE payment_links
    SET inventory_reserved = inventory_reserved + (NEW.status = 'pending')::int - (OLD.status = 'pending')::int,
        inventory_sold = inventory_sold + (NEW.status = 'completed')::int - (OLD.status = 'completed')::int
    WHERE id = NEW.metadata->>'paymentLinkId' AND organization_id = NEW.organization_id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "orders_payment_link_follow_order" AFTER UPDATE OF "status" ON "orders"
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.metadata ? 'paymentLinkId')
  EXECUTE FUNCTION "payment_link_follow_order"();
