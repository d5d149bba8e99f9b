select address from pool_addresses where protocol = $1

-- $1: protocol
