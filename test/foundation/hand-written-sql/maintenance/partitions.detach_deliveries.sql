alter table "webhook_deliveries" detach partition "webhook_deliveries_<month>" concurrently
