select exists (select 1 from "events_<month>" where dispatched_at is null)
        or exists (select 1 from "webhook_deliveries_<month>" where status = 'pending')
        or exists (select 1 from alert_emails where status = 'pending' and event_id >= $1 and event_id < $2) as owed

-- $1: ''
-- $2: '<evt id>'
