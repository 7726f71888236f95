-- 0025_fleet: the indexes of a definition's live totals
-- (GetDefinitionStatistics, fleet_counts).
--
-- instances_live_definition finds the instances of a definition that
-- have not ended (RUNNING 1, FAILED 4, COMPENSATING 5, SUSPENDED 7), in id
-- order with their version, for the totals and for the pages of those at
-- one element (fleet_instances). Ended instances, which outnumber the
-- live ones, do not enter it. tokens_instance and work_items_enabled lead from each of them
-- to its tokens and its ENABLED (1) work items, and carry the place and
-- transition so that the count reads the index only. Indexes only: a
-- release before it never reads them.
CREATE INDEX instances_live_definition
    ON instances (tenant_id, definition_key, id, definition_version) WHERE status IN (1, 4, 5, 7);
CREATE INDEX tokens_instance ON tokens (tenant_id, instance_id, place_id);
CREATE INDEX work_items_enabled ON work_items (tenant_id, instance_id, transition_id)
    WHERE state = 1;
