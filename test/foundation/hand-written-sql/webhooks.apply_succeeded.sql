with r as (
      select * from unnest($1::text[], $2::int[], $3::text[], $4::int[],
                           $5::int[], $6::text[])
        as r(id, attempt, started_at, duration_ms, status_code, response_excerpt)
    ), replaced as (
      delete from webhook_attempts a using r where a.delivery_id = r.id and a.attempt_number = r.attempt and a.outcome = 'interrupted'
         and a.delivery_id between $7 and $8
    ), logged as (
      insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, error, response_excerpt, outcome)
      select r.id, r.attempt, r.started_at::timestamptz, r.duration_ms, r.status_code, null, r.response_excerpt, 'succeeded' from r
    ), recovered as (
      update webhook_endpoints e set failing_since = null
        from (select id from webhook_endpoints where id = any($9::text[]) and failing_since is not null order by id for update) l
       where e.id = l.id
    )
    update webhook_deliveries d set status = 'succeeded', delivered_at = $10::timestamptz, next_attempt_at = null
      from r where d.id = r.id and d.status = 'pending' and d.attempt_count = r.attempt and d.id between $7 and $8

-- $1: ids
-- $2: attempts
-- $3: startedAt
-- $4: durationsMs
-- $5: statusCodes
-- $6: responseExcerpts
-- $7: from
-- $8: to
-- $9: recoveredEndpointIds
-- $10: now
