select pg_notify($1, $2)

-- $1: channel
-- $2: payload
