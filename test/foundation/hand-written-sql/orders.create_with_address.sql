with settings as materialized (
    select coalesce($1::int, coalesce((select (value #>> '{}')::int from organization_config where organization_id = $2 and key = $3), $4::int),
                    $5::int) as payment_window_minutes,
           greatest($6::int, coalesce(coalesce((select (value #>> '{}')::int from organization_config where organization_id = $2 and key = $7), $8::int), 0)) as required_confirmations
  ), 
    never_used as (
      select id from pool_addresses
      where organization_id = $2 and protocol = $9 and status = 'available' and recycled_at is null
        and (created_at, id) >= ($10::timestamptz, $11::bigint)
      order by recycled_at asc nulls first, created_at asc, id asc
      limit 1
      for update skip locked
    ), recycled as (
      select id from pool_addresses
      where not exists (select from never_used) and organization_id = $2 and protocol = $9 and status = 'available' and recycled_at is not null
        and (recycled_at, created_at, id) >= ($12::timestamptz, $13::timestamptz, $14::bigint)
      order by recycled_at asc nulls first, created_at asc, id asc
      limit 1
      for update skip locked
    ), taken as (
      update pool_addresses p
      set status = $15, cooldown_until = null, updated_at = $16::timestamptz
      from (select id from never_used union all select id from recycled) c
      where p.id = c.id
      returning p.id, p.address, p.created_at::text as pool_created_at, p.recycled_at::text as pool_recycled_at
    ), assignment as (
      insert into address_assignments (pool_address_id, organization_id, kind, order_id, deposit_binding_id, started_at, heads_seen)
      select id, $2, $17, $18::text, $19::text, $16::timestamptz, (select coalesce(jsonb_object_agg(chain_id, head_number), '{}'::jsonb) from chain_checkpoints where head_number is not null) from taken
      returning id, pool_address_id
    ),
  created as (
    insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol,
      address, pool_address_id, status, success_url, cancel_url, metadata, payment_link_id, payment_window_minutes, grace_minutes,
      required_confirmations, expires_at, grace_ends_at, created_at, updated_at)
    select $18, $2, $20, $21, $22::numeric, 0, $23,
      $24, $9, t.address, t.id, 'pending', $25::text, $26::text,
      $27::jsonb, $28::text, s.payment_window_minutes, $29::int, s.required_confirmations,
      $16::timestamptz + make_interval(mins => s.payment_window_minutes), $16::timestamptz + make_interval(mins => s.payment_window_minutes + $29::int),
      $16::timestamptz, $16::timestamptz
    from taken t cross join settings s
    returning payment_window_minutes, required_confirmations, expires_at, grace_ends_at
  )
  select t.id as pool_address_id, t.address, t.pool_created_at, t.pool_recycled_at, c.payment_window_minutes, c.required_confirmations, c.expires_at, c.grace_ends_at
  from created c cross join taken t

-- $1: paymentWindowMinutes
-- $2: organizationId
-- $3: fixed "payment_window_minutes"
-- $4: fixed 10
-- $5: fixed 10
-- $6: chainConfirmations
-- $7: fixed "confirmations.orders"
-- $8: fixed null
-- $9: protocol
-- $10: neverUsedCreatedAt
-- $11: neverUsedId
-- $12: recycledAt
-- $13: recycledCreatedAt
-- $14: recycledId
-- $15: fixed "allocated"
-- $16: now
-- $17: fixed "order"
-- $18: id
-- $19: fixed null
-- $20: orderReference
-- $21: payToken
-- $22: amount
-- $23: currency
-- $24: chainId
-- $25: successUrl
-- $26: cancelUrl
-- $27: metadata
-- $28: paymentLinkId
-- $29: graceMinutes
