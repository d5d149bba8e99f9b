alter table events attach partition "events_<month>" for values from ('<evt id>') to ('<evt id>')
