drop table if exists "events_<month>"
