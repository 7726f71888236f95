-- 0002_scheduler: indexes for the scheduler's background passes (lease
-- expiry, signal TTL, retention). Each pass takes a bounded batch ordered
-- by a time, so each needs an index on that time, kept small by a
-- partial predicate matching its query.

-- Lease expiry: ACTIVATED jobs (state 2) by lease end.
CREATE INDEX jobs_lease_expiry ON jobs (lease_expires_at) WHERE state = 2;

-- Signal TTL and signal retention: BUFFERED (outcome 2) rows never
-- consumed, by expiry.
CREATE INDEX signals_expiry ON signals (expires_at) WHERE outcome = 2 AND consumed_at = 0;

-- Idempotency retention: request records by age.
CREATE INDEX idempotency_created ON idempotency (created_at);

-- Event retention: roots that ended, by end time.
CREATE INDEX instances_ended ON instances (ended_at) WHERE parent_id IS NULL AND ended_at > 0;
