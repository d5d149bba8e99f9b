with wanted as (
      select w.id, w.attempt from unnest($1::text[], $2::int[]) as w(id, attempt)
    ), claimed as (
      update webhook_deliveries d
         set attempt_count = w.attempt, last_attempt_at = $3::timestamptz, next_attempt_at = $4::timestamptz
        from wanted w, webhook_deliveries prev, webhook_endpoints e, events ev
       where d.id = w.id and prev.id = w.id and d.status = 'pending' and d.attempt_count = w.attempt - 1
         and d.id between $5 and $6 and prev.id between $5 and $6
         and ev.id >= $7 and ev.id < $8
         and d.next_attempt_at <= $9::timestamptz
         and e.id = d.endpoint_id and e.enabled and e.deleted_at is null
         and ev.id = d.event_id
      returning d.id, w.attempt, d.retry_base, d.organization_id, e.id as endpoint_id, e.url, e.secret_ciphertext, e.failing_since,
                ev.id as event_id, ev.type, ev.created_at, ev.data, prev.last_attempt_at as previous_attempt_at
    ), interrupted as (
      insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, error, response_excerpt, outcome)
      select c.id, c.attempt - 1, coalesce(c.previous_attempt_at, $3::timestamptz), null, null, $10, null, 'interrupted'
        from claimed c
       where c.attempt > 1 and not exists (select 1 from webhook_attempts a where a.delivery_id = c.id and a.attempt_number = c.attempt - 1
                                               and a.delivery_id between $5 and $6)
    )
    select * from claimed

-- $1: ids
-- $2: attempts
-- $3: at
-- $4: lease
-- $5: from
-- $6: to
-- $7: eventFrom
-- $8: eventTo
-- $9: due
-- $10: fixed "interrupted: no result was recorded (the worker stopped during the attempt); retried"
