select p.relname as parent, c.relname as child
      from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
     where i.inhdetachpending and p.relname in ('events', 'webhook_deliveries', 'webhook_attempts')
