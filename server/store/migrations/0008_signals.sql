-- Every delivery is logged, a DUPLICATE too (a row of its own, with the
-- signal_id it repeated): signal_id stays unique among the deliveries
-- that took effect, which is what deduplication looks up
-- (list_signals_id).
DROP INDEX signals_dedupe;
CREATE UNIQUE INDEX signals_dedupe ON signals (tenant_id, signal_id)
    WHERE signal_id IS NOT NULL AND signal_id <> '' AND outcome <> 3;
