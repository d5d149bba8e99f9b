delete from events where id in ($1)

-- $1: '<evt id>'
