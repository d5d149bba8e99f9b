with taken as (
        select organization_id, status, day, slot from "order_counts" where slot <> 0 for update skip locked
      ), gone as (
        delete from "order_counts" c using taken
        where c.organization_id = taken.organization_id and c.status = taken.status and c.day = taken.day and c.slot = taken.slot
        returning c.organization_id, c.status, c.day, c.n
      ), added as (
        insert into "order_counts" (organization_id, status, day, slot, n)
        select organization_id, status, day, 0, sum(n) from gone group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, status, day, slot) do update set n = "order_counts".n + excluded.n
      )
      select count(*)::text as n from gone
