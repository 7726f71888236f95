-- 0011_inbox: the inbox's priorities, follow-up times and delegation, and
-- the indexes of its sorted listings.
--
-- priority (0-100, Camunda's default 50), follow_up_at (0 = none), the
-- owner who delegated the task and the delegation state (0 never, 1
-- pending, 2 resolved). due_fixed: due_at was chosen for the task
-- (AssignTo, UpdateTask, a USER transition's due_expression), so the due
-- time of a competing TIME transition does not replace it.
ALTER TABLE tasks
    ADD COLUMN priority integer NOT NULL DEFAULT 50,
    ADD COLUMN follow_up_at bigint NOT NULL DEFAULT 0,
    ADD COLUMN owner text,
    ADD COLUMN delegation_state smallint NOT NULL DEFAULT 0,
    ADD COLUMN due_fixed boolean NOT NULL DEFAULT false;

-- ListTasks by priority and by due time (list_tasks_*_priority_*,
-- list_tasks_*_due_*). As in 0006, each index ends with the statement's
-- ORDER BY after its equality columns, so that a page, ascending or
-- descending (a backward scan of the same index), stops at its LIMIT
-- whatever the backlog. The due key puts tasks without a due time
-- (due_at 0) after every dated task. The open tasks of a user's groups,
-- in these orders, are read from tasks_inbox_* (assignee_kind 2) with
-- status a filter: a partial index of open group tasks by these keys would
-- tempt the planner away from tasks_group_open for the creation order.
CREATE INDEX tasks_inbox_priority
    ON tasks (tenant_id, assignee_kind, assignee_id, priority, created_at, id);
CREATE INDEX tasks_inbox_due
    ON tasks (tenant_id, assignee_kind, assignee_id,
              (CASE WHEN due_at = 0 THEN 9223372036854775807 ELSE due_at END), created_at, id);
CREATE INDEX tasks_claimed_priority ON tasks (tenant_id, claimed_by, priority, created_at, id)
    WHERE claimed_by IS NOT NULL;
CREATE INDEX tasks_claimed_due
    ON tasks (tenant_id, claimed_by,
              (CASE WHEN due_at = 0 THEN 9223372036854775807 ELSE due_at END), created_at, id)
    WHERE claimed_by IS NOT NULL;
CREATE INDEX tasks_priority ON tasks (tenant_id, priority, created_at, id);
CREATE INDEX tasks_due
    ON tasks (tenant_id, (CASE WHEN due_at = 0 THEN 9223372036854775807 ELSE due_at END),
              created_at, id);
