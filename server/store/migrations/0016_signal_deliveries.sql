-- 0016_signal_deliveries: the fan-out of a signal sent to an aggregate
-- (engine/runtime/signals_fanout.c).
--
-- SendSignal writes one PENDING row per waiting instance in the unit of
-- work that logs the signal (under the aggregate's correlation lock);
-- the schedulers of every replica claim pending rows in chunks (SKIP
-- LOCKED, claimed_until as a lease) and each row is consumed (state 1
-- DELIVERED or 2 SKIPPED, done_at) by the unit of work that fires its
-- instance, so each instance gets the signal exactly once. The rows stay
-- as the delivery log of the fan-out.
CREATE TABLE signal_deliveries (
    tenant_id      text NOT NULL,
    signal_log_id  text COLLATE "C" NOT NULL,
    instance_id    text COLLATE "C" NOT NULL,
    root_id        text NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id   text NOT NULL,
    seq            bigint NOT NULL,
    state          smallint NOT NULL DEFAULT 0,
    created_at     bigint NOT NULL,
    done_at        bigint NOT NULL DEFAULT 0,
    claimed_until  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, root_id, signal_log_id, instance_id)
);

-- The schedulers' claims: only pending rows enter.
CREATE INDEX signal_deliveries_claim ON signal_deliveries (claimed_until, created_at, seq)
    WHERE state = 0;

-- "Deliveries to this aggregate are pending": a sender queues behind them.
CREATE INDEX signal_deliveries_aggregate
    ON signal_deliveries (tenant_id, aggregate_type, aggregate_id) WHERE state = 0;

-- The deliveries of one signal (ListSignals' progress counts).
CREATE INDEX signal_deliveries_signal ON signal_deliveries (tenant_id, signal_log_id, state);

-- The deliveries of one instance.
CREATE INDEX signal_deliveries_instance ON signal_deliveries (tenant_id, instance_id);

-- QUEUED signals (outcome 6): per aggregate in order of receipt, and the
-- schedulers' look-up of those whose turn came.
CREATE INDEX signals_queued
    ON signals (tenant_id, aggregate_type, aggregate_id, received_at, id) WHERE outcome = 6;
CREATE INDEX signals_queued_all ON signals (received_at, id) WHERE outcome = 6;
