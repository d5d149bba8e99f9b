-- The payment page's status endpoint keeps the facts of open orders in each API process's memory
-- (core/orders/payment-page-cache.ts) until Postgres says that the order or one of its transfers
-- changed: every committed insert, update or delete of an order or of a transfer bound to one
-- NOTIFYs the order's id. Postgres delivers a notification only once its transaction commits, to
-- every listening process, and collapses identical ones within a transaction.
CREATE FUNCTION "notify_payment_page_of_order"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('stablegate_payment_pages', OLD.id);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "orders_payment_page_changed" AFTER UPDATE OR DELETE ON "orders"
  FOR EACH ROW EXECUTE FUNCTION "notify_payment_page_of_order"();
--> statement-breakpoint
CREATE FUNCTION "notify_payment_page_of_transfer"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'DELETE' THEN
    IF NEW.order_id IS NOT NULL THEN
      PERFORM pg_notify('stablegate_payment_pages', NEW.order_id);
    END IF;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    IF OLD.order_id IS NOT NULL THEN
      PERFORM pg_notify('stablegate_payment_pages', OLD.order_id);
    END IF;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "transfers_payment_page_changed" AFTER INSERT OR UPDATE OR DELETE ON "transfers"
  FOR EACH ROW EXECUTE FUNCTION "notify_payment_page_of_transfer"();
