-- 0022_foreach: the items of a for-each (multi-instance) transition.
--
-- foreach_json: on the work item of an enabled AUTO transition with
-- for_each, the state of its items as one JSON document (the items, each
-- one's state and output, how many completed, the next to start when
-- sequential), written with the work item in the unit of work of the
-- aggregate. NULL for every other work item, and for every row written
-- before this migration. A nullable column without default: metadata
-- only.
ALTER TABLE work_items ADD COLUMN foreach_json text;
