alter table "webhook_attempts" detach partition "webhook_attempts_<month>" concurrently
