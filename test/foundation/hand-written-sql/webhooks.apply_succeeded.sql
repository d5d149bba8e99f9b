with recovered as (
      update webhook_endpoints e set failing_since = null
        from (select id from webhook_endpoints where id = any($1::text[]) and failing_since is not null order by id for update) l
       where e.id = l.id
      returning e.id
    ), r as materialized (
      select * from unnest($2::text[], $3::int[], $4::text[], $5::int[],
                           $6::int[], $7::text[])
        as r(id, attempt, started_at, duration_ms, status_code, response_excerpt)
       where (select count(*) from recovered) >= 0
    ), replaced as (
      delete from webhook_attempts a using r where a.delivery_id = r.id and a.attempt_number = r.attempt and a.outcome = 'interrupted'
         and a.delivery_id between $8 and $9
    ), logged as (
      insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, error, response_excerpt, outcome)
      select r.id, r.attempt, r.started_at::timestamptz, r.duration_ms, r.status_code, null, r.response_excerpt, 'succeeded' from r
    )
    update webhook_deliveries d set status = 'succeeded', delivered_at = $10::timestamptz, next_attempt_at = null
      from r where d.id = r.id and d.status = 'pending' and d.attempt_count = r.attempt and d.id between $8 and $9

-- $1: recoveredEndpointIds
-- $2: ids
-- $3: attempts
-- $4: startedAt
-- $5: durationsMs
-- $6: statusCodes
-- $7: responseExcerpts
-- $8: from
-- $9: to
-- $10: now
