alter table "events" detach partition "events_<month>" finalize
