delete from webhook_attempts where delivery_id in ($1)

-- $1: '<whd id>'
