with settings as materialized (
    select coalesce($1::int, coalesce((select (value #>> '{}')::int from organization_config where organization_id = $2 and key = $3), $4::int),
                    $5::int) as payment_window_minutes,
           greatest($6::int, coalesce(coalesce((select (value #>> '{}')::int from organization_config where organization_id = $2 and key = $7), $8::int), 0)) as required_confirmations,
           coalesce((select (value #>> '{}')::numeric from organization_config where organization_id = $2 and key = $9), $10::numeric) as max_order_amount
  ), 
    never_used as (
      select id from pool_addresses
      where organization_id = $2 and protocol = $11 and status = 'available' and recycled_at is null
        and (created_at, id) >= ($12::timestamptz, $13::bigint)
      order by recycled_at asc nulls first, created_at asc, id asc
      limit 1
      for update skip locked
    ), recycled as (
      select id from pool_addresses
      where not exists (select from never_used) and organization_id = $2 and protocol = $11 and status = 'available' and recycled_at is not null
        and (recycled_at, created_at, id) >= ($14::timestamptz, $15::timestamptz, $16::bigint)
      order by recycled_at asc nulls first, created_at asc, id asc
      limit 1
      for update skip locked
    ), taken as (
      update pool_addresses p
      set status = $17, cooldown_until = null, updated_at = $18::timestamptz
      from (select id from never_used union all select id from recycled) c
      where p.id = c.id
      returning p.id, p.address, p.created_at::text as pool_created_at, p.recycled_at::text as pool_recycled_at
    ), assignment as (
      insert into address_assignments (pool_address_id, organization_id, kind, order_id, deposit_binding_id, started_at, heads_seen)
      select id, $2, $19, $20::text, $21::text, $18::timestamptz, (select coalesce(jsonb_object_agg(chain_id, head_number), '{}'::jsonb) from chain_checkpoints where head_number is not null) from taken
      returning id, pool_address_id
    ),
  created as (
    insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol,
      address, pool_address_id, status, success_url, cancel_url, metadata, payment_link_id, payment_window_minutes, grace_minutes,
      required_confirmations, expires_at, grace_ends_at, created_at, updated_at)
    select $20, $2, $22, $23, $24::numeric, 0, $25,
      $26, $11, t.address, t.id, 'pending', $27::text, $28::text,
      $29::jsonb, $30::text, s.payment_window_minutes, $31::int, s.required_confirmations,
      $18::timestamptz + make_interval(mins => s.payment_window_minutes), $18::timestamptz + make_interval(mins => s.payment_window_minutes + $31::int),
      $18::timestamptz, $18::timestamptz
    from taken t cross join settings s
    where case when $24::numeric <= s.max_order_amount * 10::numeric ^ $32::int then true else refuse_order_amount(s.max_order_amount) end
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
-- $9: fixed "max_order_amount"
-- $10: fixed "1000000"
-- $11: protocol
-- $12: neverUsedCreatedAt
-- $13: neverUsedId
-- $14: recycledAt
-- $15: recycledCreatedAt
-- $16: recycledId
-- $17: fixed "allocated"
-- $18: now
-- $19: fixed "order"
-- $20: id
-- $21: fixed null
-- $22: orderReference
-- $23: payToken
-- $24: amount
-- $25: currency
-- $26: chainId
-- $27: successUrl
-- $28: cancelUrl
-- $29: metadata
-- $30: paymentLinkId
-- $31: graceMinutes
-- $32: tokenDecimals
