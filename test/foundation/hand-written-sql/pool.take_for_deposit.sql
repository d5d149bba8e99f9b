with 
    never_used as (
      select id from pool_addresses
      where organization_id = $1 and protocol = $2 and status = 'available' and recycled_at is null
        and (created_at, id) >= ($3::timestamptz, $4::bigint)
      order by recycled_at asc nulls first, created_at asc, id asc
      limit 1
      for update skip locked
    ), recycled as (
      select id from pool_addresses
      where not exists (select from never_used) and organization_id = $1 and protocol = $2 and status = 'available' and recycled_at is not null
        and (recycled_at, created_at, id) >= ($5::timestamptz, $6::timestamptz, $7::bigint)
      order by recycled_at asc nulls first, created_at asc, id asc
      limit 1
      for update skip locked
    ), taken as (
      update pool_addresses p
      set status = $8, cooldown_until = null, updated_at = $9::timestamptz
      from (select id from never_used union all select id from recycled) c
      where p.id = c.id
      returning p.id, p.address, p.created_at::text as pool_created_at, p.recycled_at::text as pool_recycled_at
    ), assignment as (
      insert into address_assignments (pool_address_id, organization_id, kind, order_id, deposit_binding_id, started_at, heads_seen)
      select id, $1, $10, $11::text, $12::text, $9::timestamptz, (select coalesce(jsonb_object_agg(chain_id, head_number), '{}'::jsonb) from chain_checkpoints where head_number is not null) from taken
      returning id, pool_address_id
    )
      select t.id as pool_address_id, t.address, a.id as assignment_id
      from taken t join assignment a on a.pool_address_id = t.id

-- $1: organizationId
-- $2: protocol
-- $3: neverUsedCreatedAt
-- $4: neverUsedId
-- $5: recycledAt
-- $6: recycledCreatedAt
-- $7: recycledId
-- $8: fixed "bound"
-- $9: now
-- $10: fixed "deposit"
-- $11: fixed null
-- $12: holderId
