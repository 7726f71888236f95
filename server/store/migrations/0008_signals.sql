-- Every delivery is logged, a DUPLICATE too (a row of its own, with the
-- signal_id it repeated): signal_id stays unique among the deliveries
-- that took effect, which is what deduplication looks up
-- (list_signals_id).
DROP INDEX signals_dedupe;
CREATE UNIQUE INDEX signals_dedupe ON signals (tenant_id, signal_id)
    WHERE signal_id IS NOT NULL AND signal_id <> '' AND outcome <> 3;

-- A signal that started an instance (SendSignal with start, outcome 5
-- STARTED) waits in the buffer for that instance's first wait: its TTL and
-- retention are those of a BUFFERED one (outcome 2).
DROP INDEX signals_expiry;
CREATE INDEX signals_expiry ON signals (expires_at, id)
    WHERE outcome IN (2, 5) AND consumed_at = 0;
DROP INDEX signals_tenant_expiry;
CREATE INDEX signals_tenant_expiry ON signals (tenant_id, expires_at, id)
    WHERE outcome IN (2, 5) AND consumed_at = 0;
