drop table if exists "webhook_attempts_<month>"
