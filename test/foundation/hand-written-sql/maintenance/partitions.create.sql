select create_history_partition($1::timestamptz, $2::timestamptz, $3)

-- $1: '<time>'
-- $2: '<time>'
-- $3: '<month>'
