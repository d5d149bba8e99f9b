delete from alert_emails where event_id >= $1 and event_id < $2

-- $1: '<evt id>'
-- $2: '<evt id>'
