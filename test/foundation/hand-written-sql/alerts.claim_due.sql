with due as (
      select event_id from alert_emails
       where status = 'pending' and next_attempt_at <= $1::timestamptz
       order by next_attempt_at limit $2
       for update skip locked)
    update alert_emails a set next_attempt_at = $3::timestamptz, attempts = a.attempts + 1
      from due, events e
     where a.event_id = due.event_id and e.id = a.event_id
    returning a.event_id, a.organization_id, a.attempts, e.type, e.data, e.created_at

-- $1: now
-- $2: fixed 50
-- $3: lease
