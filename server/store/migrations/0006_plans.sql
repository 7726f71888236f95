-- 0006_plans: every listing and lookup gets an index that serves both its
-- filter and its order, so that its plan does not depend on statistics.
--
-- Statements are prepared once per connection and, after a few runs,
-- Postgres may keep one generic plan for every parameter value. A plan
-- that must sort what its index returns reads every matching row before
-- the first one is returned: the whole backlog of a job type, every
-- subscription waiting for a signal name, every task ever given to a
-- user. Each index below ends with the statement's ORDER BY columns after
-- its equality columns, so that the scan stops at the LIMIT. The
-- statements themselves come one per shape (pg/store.c): the parameters a
-- call has pick the statement, and so the index.

-- Activation: ACTIVATABLE (1) jobs of a type, oldest first, ties by id.
-- The old index, without id and with state in the middle, left the
-- planner a Sort over every waiting job of the type, which it chose for a
-- type the last ANALYZE had not seen.
DROP INDEX jobs_activation;
CREATE INDEX jobs_activation ON jobs (tenant_id, job_type, activatable_at, id) WHERE state = 1;

-- Subscriptions waiting for a signal, by aggregate or by instance, in
-- creation order (find_subscriptions_*). The correlation prefix also
-- serves sub_awaited.
DROP INDEX subscriptions_correlation;
CREATE INDEX subscriptions_correlation
    ON subscriptions (tenant_id, signal_name, aggregate_type, aggregate_id, created_at, id);
DROP INDEX subscriptions_instance;
CREATE INDEX subscriptions_instance
    ON subscriptions (tenant_id, instance_id, signal_name, created_at, id);

-- Inbox listings (list_tasks_*), by (created_at, id): tasks given to a
-- user or a group, tasks a user claimed, and every task of the tenant.
DROP INDEX tasks_inbox;
CREATE INDEX tasks_inbox ON tasks (tenant_id, assignee_kind, assignee_id, created_at, id);
DROP INDEX tasks_claimed;
CREATE INDEX tasks_claimed ON tasks (tenant_id, claimed_by, created_at, id)
    WHERE claimed_by IS NOT NULL;
CREATE INDEX tasks_created ON tasks (tenant_id, created_at, id);

-- Open tasks of a group (the group branch of a user's inbox).
CREATE INDEX tasks_group_open ON tasks (tenant_id, assignee_id, created_at, id)
    WHERE assignee_kind = 2 AND status = 1;

-- Instance listings (list_instances_*), by (created_at, id).
-- instances_started_by (0001) already ends so.
DROP INDEX instances_aggregate;
CREATE INDEX instances_aggregate ON instances (tenant_id, aggregate_type, aggregate_id, created_at, id)
    WHERE aggregate_type IS NOT NULL;
CREATE INDEX instances_definition ON instances (tenant_id, definition_key, created_at, id);
CREATE INDEX instances_created ON instances (tenant_id, created_at, id);

-- The delivery log (list_signals_*), by (received_at, id): signals sent
-- to or consumed by an instance, sent to an aggregate, and all of them.
DROP INDEX signals_instance;
CREATE INDEX signals_instance ON signals (tenant_id, instance_id, received_at, id)
    WHERE instance_id IS NOT NULL;
DROP INDEX signals_consumer;
CREATE INDEX signals_consumer ON signals (tenant_id, consumed_by_instance, received_at, id)
    WHERE consumed_by_instance IS NOT NULL;
CREATE INDEX signals_aggregate ON signals (tenant_id, aggregate_type, aggregate_id, received_at, id)
    WHERE aggregate_type IS NOT NULL;
CREATE INDEX signals_received ON signals (tenant_id, received_at, id);

-- Tenant-wide event reads (read_events_all), in sequence order: only
-- numbered events enter (the sequencer numbers them after commit).
CREATE INDEX events_sequenced ON events (tenant_id, sequence) WHERE sequence IS NOT NULL;

-- The buffer (consume_signal): signals of a name still waiting for an
-- instance or an aggregate, oldest first. Only buffered rows enter. They
-- replace the correlation index, which held every signal ever received.
DROP INDEX signals_correlation;
CREATE INDEX signals_buffer_instance ON signals (tenant_id, name, instance_id, received_at, id)
    WHERE buffered AND NOT discarded;
CREATE INDEX signals_buffer_aggregate
    ON signals (tenant_id, name, aggregate_type, aggregate_id, received_at, id)
    WHERE buffered AND NOT discarded;
