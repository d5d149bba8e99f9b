select p.id as pool_address_id, o.address, p.created_at::text as pool_created_at, p.recycled_at::text as pool_recycled_at,
         o.payment_window_minutes, o.required_confirmations, o.expires_at, o.grace_ends_at
  from orders o join pool_addresses p on p.id = o.pool_address_id
  where o.id = $1 and o.organization_id = $2

-- $1: id
-- $2: organizationId
