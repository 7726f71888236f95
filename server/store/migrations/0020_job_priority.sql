-- 0020_job_priority: jobs have a priority, and activation takes them by
-- an aged rank in one index scan.
--
-- priority: 0 to 100, higher first; 50 for every job that had none.
-- activation_rank: activatable_at less priority times the aging step
-- (WF_JOB_PRIORITY_AGING, 1 s by default), in microseconds, written by
-- the store with every job row (wf_store_job_rank). Activation takes the
-- lowest rank first, ties by id: among jobs activatable at the same time
-- the highest priority, and a job that has waited k steps ranks with one
-- of k more priority points that has just become activatable, so no job
-- starves.
--
-- Rows written before this migration, or by a release without it during
-- a rollout, have rank 0: they rank first, as the oldest, until they are
-- written again. Both columns have constant defaults (metadata only).
ALTER TABLE jobs ADD COLUMN priority smallint NOT NULL DEFAULT 50;
ALTER TABLE jobs ADD COLUMN activation_rank bigint NOT NULL DEFAULT 0;

-- Activation (activate_jobs): ACTIVATABLE (1) jobs of a type by rank,
-- ties by id. It replaces the index by (activatable_at, id): the scan
-- stops at the LIMIT, and rank <= now bounds it (a rank is never above
-- its activatable_at).
DROP INDEX jobs_activation;
CREATE INDEX jobs_activation_rank ON jobs (tenant_id, job_type, activation_rank, id)
    WHERE state = 1;
