select e.id from events e
      where e.id > $1 and e.id < $2 and e.created_at < $3::timestamptz and not (dispatched_at is null)
      order by e.id
      limit $4
      for update of e skip locked

-- $1: ''
-- $2: '<evt id>'
-- $3: '<time>'
-- $4: '10'
