-- 0010_suspend: SuspendInstance and ResumeInstance.
--
-- A suspended tree is one whose root has status 7 (SUSPENDED); no column
-- of its jobs or timers changes. The lease statement (activate_jobs) and
-- the due-timer claims skip the rows of such a tree with one anti-join
-- probe per candidate on this partial index, which holds only the
-- suspended roots: it stays tiny, and a candidate of a running tree costs
-- one lookup that finds nothing. The activation and due-timer indexes
-- keep serving the statements' order and limit.
CREATE INDEX instances_suspended ON instances (tenant_id, id) WHERE status = 7;
