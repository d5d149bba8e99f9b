select id, pool_address_id, kind, order_id, deposit_binding_id, started_at, ended_at
    from address_assignments
    where pool_address_id = any($1::bigint[])
      and started_at <= $2::timestamptz
      and (ended_at is null or ended_at >= $3::timestamptz)
    order by pool_address_id, started_at

-- $1: poolAddressIds
-- $2: to
-- $3: from
