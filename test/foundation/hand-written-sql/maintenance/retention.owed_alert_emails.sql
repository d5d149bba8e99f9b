select event_id from alert_emails where event_id in ($1, $2) and status = 'pending'

-- $1: '<evt id>'
-- $2: '<evt id>'
