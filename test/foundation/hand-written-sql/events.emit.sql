with inserted as (
    insert into events (id, organization_id, type, data, created_at, target_endpoint_id)
    values ($1, $2, $3, $4::jsonb,
            $5::timestamptz, $6::text)
    returning id
  )
  select pg_notify($7, '') from inserted

-- $1: id
-- $2: organizationId
-- $3: type
-- $4: data
-- $5: createdAt
-- $6: targetEndpointId
-- $7: fixed "stablegate_events"
