-- An organization's support contact (issue 40, a newcomer's trial): an e-mail address or an
-- http(s) URL that payer pages show beside the organization's name, so a payer who is stuck knows
-- whom to ask. Null: none shown. The name itself already exists (organizations.name) and becomes
-- editable (PATCH /organization).
ALTER TABLE "organizations" ADD COLUMN "support_contact" text;
--> statement-breakpoint
-- Refuses an order creation whose amount is above the organization's max_order_amount (issue 40:
-- base units sent by mistake made a 10,000,000 USDT order). Called from the creation statements
-- themselves (core/orders/orders.ts), which read the setting in the same round trip: the raised
-- error aborts the whole statement, so no address is taken and no order stored. The maximum goes in
-- the error's detail for the API's message. Volatile (the default): never folded at plan time, and
-- a CASE only calls it on the refusing branch.
CREATE OR REPLACE FUNCTION "refuse_order_amount"(maximum numeric) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'order amount above max_order_amount' USING ERRCODE = 'SGA01', DETAIL = maximum::text;
END $$;
