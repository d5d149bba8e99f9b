select c.relname as name from pg_class c
     where c.relkind = 'r' and c.relname ~ '^webhook_deliveries_(p[0-9]{6}|before_partitioning)$'
       and not exists (select 1 from pg_inherits i where i.inhrelid = c.oid)
