delete from webhook_deliveries where id in ($1)

-- $1: '<whd id>'
