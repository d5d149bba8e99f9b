with input as materialized (
    select * from json_to_recordset($1::json) as i(n int, id text, now timestamptz, order_reference text, pay_token text,
      amount numeric, currency text, chain_id text, success_url text, cancel_url text, metadata jsonb, payment_link_id text, payment_window_minutes int,
      grace_minutes int, chain_confirmations int, token_decimals int)
  ), settings as materialized (
    select coalesce(coalesce((select (value #>> '{}')::int from organization_config where organization_id = $2 and key = $3), $4::int), $5::int) as payment_window_minutes,
           coalesce((select (value #>> '{}')::numeric from organization_config where organization_id = $2 and key = $6), $7::numeric) as max_order_amount
  ), 
    never_used as (
      select id, recycled_at, created_at from pool_addresses
      where organization_id = $2 and protocol = $8 and status = 'available' and recycled_at is null
        and (created_at, id) >= ($9::timestamptz, $10::bigint)
      order by recycled_at asc nulls first, created_at asc, id asc
      limit <n>
      for update skip locked
    ), recycled as (
      select id, recycled_at, created_at from pool_addresses
      where not exists (select from never_used) and organization_id = $2 and protocol = $8 and status = 'available' and recycled_at is not null
        and (recycled_at, created_at, id) >= ($11::timestamptz, $12::timestamptz, $13::bigint)
      order by recycled_at asc nulls first, created_at asc, id asc
      limit <n>
      for update skip locked
    ), picked as (
      select id, row_number() over (order by recycled_at asc nulls first, created_at asc, id asc) as n
      from (select * from never_used union all select * from recycled) c
    ), taken as (
      update pool_addresses p
      set status = 'allocated', cooldown_until = null, updated_at = o.now
      from picked c join input o on o.n = c.n
      where p.id = c.id
      returning p.id, p.address, p.created_at::text as pool_created_at, p.recycled_at::text as pool_recycled_at, c.n
    ), assignment as (
      insert into address_assignments (pool_address_id, organization_id, kind, order_id, deposit_binding_id, started_at, heads_seen)
      select t.id, $2, 'order', o.id, null, o.now, (select coalesce(jsonb_object_agg(chain_id, head_number), '{}'::jsonb) from chain_checkpoints where head_number is not null)
      from taken t join input o on o.n = t.n
      returning id, pool_address_id
    ),
  created as (
    insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol,
      address, pool_address_id, status, success_url, cancel_url, metadata, payment_link_id, payment_window_minutes, grace_minutes,
      required_confirmations, expires_at, grace_ends_at, created_at, updated_at)
    select i.id, $2, i.order_reference, i.pay_token, i.amount, 0, i.currency, i.chain_id, $8, t.address, t.id, 'pending',
      i.success_url, i.cancel_url, i.metadata, i.payment_link_id, w.minutes, i.grace_minutes, greatest(i.chain_confirmations::int, coalesce(coalesce((select (value #>> '{}')::int from organization_config where organization_id = $2 and key = $14), $15::int), 0)),
      i.now + make_interval(mins => w.minutes), i.now + make_interval(mins => w.minutes + i.grace_minutes), i.now, i.now
    from taken t join input i on i.n = t.n cross join settings s
      cross join lateral (select coalesce(i.payment_window_minutes, s.payment_window_minutes) as minutes) w
    where case when i.amount <= s.max_order_amount * 10::numeric ^ i.token_decimals then true else refuse_order_amount(s.max_order_amount) end
    returning id, payment_window_minutes, required_confirmations, expires_at, grace_ends_at
  )
  select i.n, t.id as pool_address_id, t.address, t.pool_created_at, t.pool_recycled_at, c.payment_window_minutes, c.required_confirmations, c.expires_at, c.grace_ends_at
  from taken t join input i on i.n = t.n join created c on c.id = i.id
  order by i.n

-- $1: orders
-- $2: organizationId
-- $3: fixed "payment_window_minutes"
-- $4: fixed 10
-- $5: fixed 10
-- $6: fixed "max_order_amount"
-- $7: fixed "1000000"
-- $8: protocol
-- $9: neverUsedCreatedAt
-- $10: neverUsedId
-- $11: recycledAt
-- $12: recycledCreatedAt
-- $13: recycledId
-- $14: fixed "confirmations.orders"
-- $15: fixed null
