-- 0007_wake: wake-ups leave the writing transactions; the scheduler's
-- statements get one index per shape.
--
-- The triggers of 0001 called pg_notify in every transaction that wrote
-- events or made a job activatable. A notifying transaction takes
-- Postgres's one database-wide notify lock at commit, so every writer
-- queued on it. The store now sends the same notifications itself, after
-- commit, from a thread of its own that coalesces the commits of a short
-- interval into one transaction (pg/store.c, "notifier").
DROP TRIGGER events_notify ON events;
DROP TRIGGER jobs_notify_insert ON jobs;
DROP TRIGGER jobs_notify_update ON jobs;
DROP FUNCTION wf_notify_events();
DROP FUNCTION wf_notify_jobs();

-- The scheduler's passes run over every tenant (the background thread) or
-- over one (RunSchedulerPass): two statements, each served by an index on
-- its filter and its order, instead of one "($n IS NULL OR tenant_id = $n)"
-- statement whose generic plan cannot use the tenant.

-- Due timers by (due_at, id), and per tenant.
DROP INDEX timers_due;
CREATE INDEX timers_due ON timers (due_at, id);
CREATE INDEX timers_tenant_due ON timers (tenant_id, due_at, id);

-- Lease expiry: ACTIVATED jobs (state 2) by (lease_expires_at, id).
DROP INDEX jobs_lease_expiry;
CREATE INDEX jobs_lease_expiry ON jobs (lease_expires_at, id) WHERE state = 2;
CREATE INDEX jobs_tenant_lease_expiry ON jobs (tenant_id, lease_expires_at, id) WHERE state = 2;

-- Signal TTL and retention: BUFFERED rows never consumed, by (expires_at, id).
DROP INDEX signals_expiry;
CREATE INDEX signals_expiry ON signals (expires_at, id) WHERE outcome = 2 AND consumed_at = 0;
CREATE INDEX signals_tenant_expiry ON signals (tenant_id, expires_at, id)
    WHERE outcome = 2 AND consumed_at = 0;
-- The TTL pass reads the buffer itself (buffered, not discarded), which the
-- gauge's index of 0003 covers: ordered by (expires_at, id) it serves the
-- pass's order too; and per tenant.
DROP INDEX signals_buffered;
CREATE INDEX signals_buffered ON signals (expires_at, id) WHERE buffered AND NOT discarded;
CREATE INDEX signals_tenant_buffered ON signals (tenant_id, expires_at, id)
    WHERE buffered AND NOT discarded;

-- Event retention of one tenant: its unswept ended roots, by end time.
CREATE INDEX instances_tenant_unswept ON instances (tenant_id, ended_at)
    WHERE parent_id IS NULL AND ended_at > 0 AND NOT events_swept;
