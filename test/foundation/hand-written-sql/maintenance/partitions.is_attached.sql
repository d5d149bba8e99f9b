select exists (select 1 from pg_inherits i join pg_class c on c.oid = i.inhrelid where c.relname = $1 and not i.inhdetachpending) as attached

-- $1: 'events_<month>'
