-- 0012_incidents: the open incident of an instance, and the indexes of
-- ListIncidents and of the ListInstances filters on variables.
--
-- An incident is open exactly while its instance is FAILED (status 4),
-- and an instance has at most one: it stops on it. So the incident lives
-- on the instance row, written in the unit of work that fails the
-- instance and cleared by the one that moves it out of FAILED
-- (RetryInstance, CancelInstance), and it is deleted with the instance by
-- the same retention: no table, no sweep of its own.
ALTER TABLE instances
    ADD COLUMN incident_code          text,
    ADD COLUMN incident_transition_id text,
    ADD COLUMN incident_at            bigint NOT NULL DEFAULT 0,
    ADD COLUMN incident_attempts      int NOT NULL DEFAULT 0,
    ADD COLUMN retries                int NOT NULL DEFAULT 0;

-- Incidents recorded before codes were: open since the instance last
-- changed.
UPDATE instances SET incident_code = 'UNKNOWN', incident_at = updated_at
    WHERE status = 4 AND incident_code IS NULL;

-- ListIncidents (list_incidents_*), by (incident_at, id): only FAILED
-- rows enter, so the index holds the open incidents and nothing else.
CREATE INDEX instances_incidents ON instances (tenant_id, incident_at, id) WHERE status = 4;
CREATE INDEX instances_incidents_definition
    ON instances (tenant_id, definition_key, incident_at, id) WHERE status = 4;

-- ListInstances by variables (list_instances_variables): the variables
-- under the tenant's key, {tenant: variables}, in a jsonb_path_ops GIN.
-- jsonb_path_ops hashes each path from the top to a value, so every entry
-- carries the tenant as the first key of its path: a lookup of one
-- tenant's filter reads only that tenant's entries, as the btree indexes
-- with tenant_id first do, and the index partitions with the table as it
-- is (non-unique). It needs no extension (btree_gin would, for a
-- tenant_id column beside the jsonb).
CREATE INDEX instances_variables ON instances
    USING gin ((jsonb_set('{}'::jsonb, ARRAY[tenant_id], variables_json::jsonb)) jsonb_path_ops);
