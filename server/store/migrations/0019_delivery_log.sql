-- 0019_delivery_log: the deliveries of a fanned-out signal as the log of
-- each instance (ListSignals by instance), and their retention.
--
-- received_at is the signal's receipt (signals.received_at of its log
-- row), copied into each delivery row so that an instance's deliveries
-- come in the order of the delivery log, (received_at, signal id), from
-- one index, page after page. The rows written before this migration take
-- it from their signal.
ALTER TABLE signal_deliveries ADD COLUMN received_at bigint NOT NULL DEFAULT 0;
UPDATE signal_deliveries d SET received_at = s.received_at
    FROM signals s WHERE s.tenant_id = d.tenant_id AND s.id = d.signal_log_id;

-- An instance's deliveries in the order of the log (the index it replaces
-- served the same prefix without the order).
CREATE INDEX signal_deliveries_log
    ON signal_deliveries (tenant_id, instance_id, received_at, signal_log_id);
DROP INDEX signal_deliveries_instance;

-- Retention: delivered and skipped rows by the time they ran, per tenant
-- too (RunSchedulerPass sweeps one tenant).
CREATE INDEX signal_deliveries_done ON signal_deliveries (done_at) WHERE state <> 0;
CREATE INDEX signal_deliveries_tenant_done
    ON signal_deliveries (tenant_id, done_at) WHERE state <> 0;
