select address from pool_addresses where protocol = $1 and status in ('allocated', 'bound', 'cooldown')
      union select destination as address from refunds where protocol = $1 and status = 'approved' and destination is not null

-- $1: protocol
