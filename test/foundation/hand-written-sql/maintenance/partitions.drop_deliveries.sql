drop table if exists "webhook_deliveries_<month>"
