insert into alert_emails (event_id, organization_id, status, next_attempt_at)
    select e.id, e.organization_id, 'pending', $1::timestamptz
      from events e
     where e.type like 'alert.%' and e.created_at >= $2::timestamptz
       and not exists (select 1 from alert_emails a where a.event_id = e.id)
    on conflict (event_id) do nothing
    returning event_id

-- $1: now
-- $2: since
