-- 0027_job_fairness: jobs have a fairness key, and activation shares each
-- pass between the keys waiting for a job type.
--
-- fairness_key: from the transition's job_fairness_key_expression when
-- the job is created; '' for every job without one (those share one key).
-- A constant default: metadata only.
ALTER TABLE jobs ADD COLUMN fairness_key text NOT NULL DEFAULT '';

-- Activation (activate_jobs) finds the keys waiting for a type by a skip
-- scan of this index (one descent per key, in key order) and the head of
-- each key's queue, its lowest rank, from the same index. The rest of a
-- pass still comes from jobs_activation_rank (0020).
CREATE INDEX jobs_activation_fair ON jobs (tenant_id, job_type, fairness_key, activation_rank, id)
    WHERE state = 1;
