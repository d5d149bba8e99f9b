alter table events detach partition "events_<month>" concurrently
