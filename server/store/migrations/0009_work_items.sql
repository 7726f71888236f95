-- Work-item history (ListWorkItems). A work item that fires or is
-- withdrawn is no longer deleted: it is kept with state FINISHED (4) or
-- WITHDRAWN (3), its end time, who finished it, its deadline and its
-- assignee, job type or signal name. Only live items (ENABLED 1, FIRED 2,
-- the saga's completed compensable steps) are loaded with the aggregate:
-- work_items_live serves that read, so history does not slow down a unit
-- of work, and work_items_instance serves the listing of one instance in
-- enabled order.
ALTER TABLE work_items
    ADD COLUMN deadline bigint NOT NULL DEFAULT 0,
    ADD COLUMN assignee_kind smallint NOT NULL DEFAULT 0,
    ADD COLUMN assignee_id text,
    ADD COLUMN job_type text,
    ADD COLUMN signal_name text,
    ADD COLUMN finished_by text;

CREATE INDEX work_items_live ON work_items (tenant_id, root_id, enabled_at, id)
    WHERE state IN (1, 2);
CREATE INDEX work_items_instance ON work_items (tenant_id, instance_id, enabled_at, id);
