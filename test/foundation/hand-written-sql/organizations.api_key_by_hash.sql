select id, organization_id, role, key_hash, revoked_at from api_keys where key_hash = $1 limit 1

-- $1: hash
