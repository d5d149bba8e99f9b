select pg_get_expr(c.relpartbound, c.oid) as bound from pg_class c where c.relname = 'events_before_partitioning' and c.relispartition
