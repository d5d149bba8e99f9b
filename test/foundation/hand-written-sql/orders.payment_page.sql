select o.id, o.organization_id, o.order_reference, o.status, o.amount, o.currency, o.chain_id, o.protocol, o.address, o.success_url, o.cancel_url, o.required_confirmations, o.created_at, o.expires_at, o.grace_ends_at, o.tx_hash, o.late_paid_at, o.unattributed_payments, o.routes, o.chosen_routes, o.route_currency, org.name as organization_name, org.support_contact,
    coalesce((
      select json_agg(json_build_object('id', t.id, 'chainId', t.chain_id, 'currency', t.currency, 'amount', t.amount::text,
        'status', t.status, 'confirmations', t.confirmations, 'txHash', t.tx_hash, 'logIndex', t.log_index,
        'blockNumber', t.block_number, 'blockTimestamp', t.block_timestamp))
      from transfers t where t.order_id = o.id and t.counted and t.status <> 'dropped'
    ), '[]'::json) as counted_transfers
  from orders o join organizations org on org.id = o.organization_id
  where o.pay_token = $1

-- $1: token
