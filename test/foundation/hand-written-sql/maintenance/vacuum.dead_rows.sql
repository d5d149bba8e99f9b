select s.relname, s.n_dead_tup as dead
      from pg_stat_user_tables s
      join pg_class c on c.oid = s.relid and c.relkind = 'r'
      left join pg_inherits i on i.inhrelid = s.relid
      left join pg_class parent on parent.oid = i.inhparent
     where s.schemaname = current_schema()
       and coalesce(parent.relname, s.relname) in ($1, $2, $3, $4, $5)
       and s.n_dead_tup >= $6
     order by s.n_dead_tup desc

-- $1: 'pool_addresses'
-- $2: 'orders'
-- $3: 'transfers'
-- $4: 'events'
-- $5: 'webhook_deliveries'
-- $6: '20'
