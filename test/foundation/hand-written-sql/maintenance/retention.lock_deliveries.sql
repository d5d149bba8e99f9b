select id, event_id, status = 'pending' as owed from webhook_deliveries where event_id in ($1, $2) for update

-- $1: '<evt id>'
-- $2: '<evt id>'
