delete from alert_emails where event_id in ($1)

-- $1: '<evt id>'
