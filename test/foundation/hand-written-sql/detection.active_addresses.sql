select address from pool_addresses where protocol = $1 and status in ('allocated', 'bound', 'cooldown')

-- $1: protocol
